// pgjdbc against basin. Compiled and run by compat/compat_test.go:
//
//   javac -cp /usr/share/java/postgresql.jar -d OUT Client.java
//   java -cp OUT:/usr/share/java/postgresql.jar Client JDBC_URL basic|catalog
//
// "basic" uses prepared statements, result set getters, fetch sizes and
// errors; "catalog" uses DatabaseMetaData, which reads pg_catalog. It prints
// "name: value" lines that the Go test compares, and exits non-zero on an
// unexpected exception.

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.postgresql.PGStatement;

public class Client {
    static void out(String name, Object value) {
        System.out.println(name + ": " + value);
    }

    @SuppressWarnings("deprecation") // Driver.getVersion: the version string the brief of these tests asks for
    public static void main(String[] args) throws Exception {
        String url = args[0];
        String mode = args.length > 1 ? args[1] : "basic";
        out("version", org.postgresql.Driver.getVersion());
        out("java", System.getProperty("java.version"));
        try (Connection conn = DriverManager.getConnection(url, "basin", "")) {
            if (mode.equals("catalog")) {
                catalog(conn);
            } else {
                basic(conn);
            }
        }
    }

    static void basic(Connection conn) throws SQLException {
        DatabaseMetaData md = conn.getMetaData();
        out("product", md.getDatabaseProductName() + " " + md.getDatabaseProductVersion());

        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SHOW TABLES")) {
            List<String> names = new ArrayList<>();
            while (rs.next()) {
                names.add(rs.getString("name") + ":" + rs.getString("kind"));
            }
            out("show tables", String.join(",", names));
        }

        // setString, and the result's metadata.
        try (PreparedStatement ps = conn.prepareStatement(
                "SELECT region, orders, revenue FROM revenue_by_region WHERE region = ?")) {
            ps.setString(1, "eu");
            try (ResultSet rs = ps.executeQuery()) {
                ResultSetMetaData rmd = rs.getMetaData();
                List<String> cols = new ArrayList<>();
                for (int i = 1; i <= rmd.getColumnCount(); i++) {
                    cols.add(rmd.getColumnName(i) + ":" + rmd.getColumnTypeName(i));
                }
                out("columns", String.join(",", cols));
                rs.next();
                out("eu", rs.getString(1) + "|" + rs.getLong("orders") + "|" + rs.getDouble("revenue"));
            }
        }

        // setLong, executed past pgjdbc's prepareThreshold (5) so the last
        // runs use a named server-side statement and binary results.
        String last = "";
        boolean serverPrepared = false;
        for (int i = 0; i < 8; i++) {
            try (PreparedStatement ps = conn.prepareStatement(
                    "SELECT order_id, customer, amount, ts FROM order_by_id WHERE order_id = ?")) {
                ps.setLong(1, 42L + i);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        throw new SQLException("no row for order " + (42 + i));
                    }
                    String row = rs.getLong(1) + "|" + rs.getString(2) + "|" + rs.getDouble(3) + "|"
                            + rs.getTimestamp(4) + "|" + rs.getObject(1).getClass().getSimpleName();
                    if (i == 0) {
                        out("order 42", row);
                    }
                    last = row;
                }
                serverPrepared = ps.unwrap(PGStatement.class).isUseServerPrepare();
            }
        }
        out("order 49", last);
        out("server prepared", serverPrepared);

        // A reused PreparedStatement with two parameters.
        try (PreparedStatement ps = conn.prepareStatement(
                "SELECT count(*) FROM order_by_id WHERE customer = ? AND amount > ?")) {
            List<String> counts = new ArrayList<>();
            for (int i = 0; i < 7; i++) {
                ps.setString(1, "c" + i);
                ps.setDouble(2, 10.0);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    counts.add(Long.toString(rs.getLong(1)));
                }
            }
            out("counts over 10", String.join(",", counts));
        }

        // A fetch size inside a transaction: rows come in portal batches
        // (Execute with a row limit, PortalSuspended).
        conn.setAutoCommit(false);
        try (PreparedStatement ps = conn.prepareStatement("SELECT order_id FROM order_by_id ORDER BY order_id")) {
            ps.setFetchSize(7);
            long n = 0, sum = 0;
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    n++;
                    sum += rs.getLong(1);
                }
            }
            out("fetch size 7", n + " rows, sum " + sum);
        }
        conn.commit();
        conn.setAutoCommit(true);

        // A bad query: SQLException.getSQLState(), and the connection stays usable.
        try (PreparedStatement ps = conn.prepareStatement("SELECT nope FROM revenue_by_region WHERE region = ?")) {
            ps.setString(1, "eu");
            ps.executeQuery();
            out("bad query", "no error");
        } catch (SQLException e) {
            out("bad query", e.getSQLState() + " " + e.getMessage().split("\n")[0]);
        }
        try (Statement st = conn.createStatement()) {
            st.executeQuery("SELEC 1");
            out("syntax error", "no error");
        } catch (SQLException e) {
            out("syntax error", e.getSQLState());
        }
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*) FROM order_by_id")) {
            rs.next();
            out("after error", rs.getLong(1));
        }

        // LISTEN/NOTIFY: PGConnection.getNotifications. The session hears
        // its own NOTIFY, and LISTEN on a view's name hears the view's
        // changes, as JSON.
        PGConnection pg = conn.unwrap(PGConnection.class);
        try (Statement st = conn.createStatement()) {
            st.execute("LISTEN hello");
            st.execute("NOTIFY hello, 'from jdbc'");
            PGNotification n = waitNotify(pg, "hello", "from jdbc");
            out("notify", n.getName() + "|" + n.getParameter() + "|" + (n.getPID() == pg.getBackendPID()));
            st.execute("LISTEN ping_counts");
            st.execute("INSERT INTO pings VALUES ('jdbc', 'hi')");
            n = waitNotify(pg, "ping_counts", "\"client\":\"jdbc\"");
            String p = n.getParameter();
            out("view notify", n.getName() + "|" + field(p, "client") + "|" + field(p, "n") + "|" + field(p, "_op") + "|" + !field(p, "_position").isEmpty());
        }
    }

    // waitNotify returns the first notification on channel whose payload
    // contains part, within 30 seconds.
    static PGNotification waitNotify(PGConnection pg, String channel, String part) throws SQLException {
        long deadline = System.currentTimeMillis() + 30000;
        while (System.currentTimeMillis() < deadline) {
            PGNotification[] ns = pg.getNotifications(1000);
            if (ns == null) {
                continue;
            }
            for (PGNotification n : ns) {
                if (n.getName().equals(channel) && n.getParameter().contains(part)) {
                    return n;
                }
            }
        }
        throw new SQLException("no notification on " + channel);
    }

    // field returns the value of a string or number field of a flat JSON
    // object, without a JSON library.
    static String field(String json, String name) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"" + name + "\":(\"([^\"]*)\"|([^,}]*))").matcher(json);
        if (!m.find()) {
            return "";
        }
        return m.group(2) != null ? m.group(2) : m.group(3);
    }

    // A catalog step; its SQLSTATE is printed in place of its result when it
    // fails, so that one failing catalog query does not hide the others.
    interface Step {
        String run() throws SQLException;
    }

    static void step(String name, Step s) {
        try {
            out(name, s.run());
        } catch (SQLException e) {
            out(name, "ERROR " + e.getSQLState() + " " + e.getMessage().split("\n")[0]);
        }
    }

    static void catalog(Connection conn) throws SQLException {
        DatabaseMetaData md = conn.getMetaData();
        // Every table, view and stream, as JDBC tools (DBeaver, Metabase) list them.
        step("getTables", () -> {
            List<String> tables = new ArrayList<>();
            try (ResultSet rs = md.getTables(null, null, "%", null)) {
                while (rs.next()) {
                    String schema = rs.getString("TABLE_SCHEM");
                    if (schema != null && (schema.startsWith("pg_") || schema.equals("information_schema"))) {
                        continue;
                    }
                    tables.add(rs.getString("TABLE_NAME") + ":" + rs.getString("TABLE_TYPE"));
                }
            }
            tables.sort(null);
            return String.join(",", tables);
        });
        for (String rel : new String[] {"revenue_by_region", "order_by_id", "customers", "orders"}) {
            step("getColumns " + rel, () -> {
                List<String> cols = new ArrayList<>();
                try (ResultSet rs = md.getColumns(null, null, rel, "%")) {
                    while (rs.next()) {
                        cols.add(rs.getString("COLUMN_NAME") + ":" + rs.getString("TYPE_NAME"));
                    }
                }
                return String.join(",", cols);
            });
        }
        for (String rel : new String[] {"revenue_by_region", "order_by_id", "customers"}) {
            step("getPrimaryKeys " + rel, () -> {
                List<String> keys = new ArrayList<>();
                try (ResultSet rs = md.getPrimaryKeys(null, null, rel)) {
                    while (rs.next()) {
                        keys.add(rs.getString("COLUMN_NAME"));
                    }
                }
                return String.join(",", keys);
            });
        }
    }
}
