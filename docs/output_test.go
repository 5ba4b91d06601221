package docs

import (
	"fmt"
	"regexp"
	"strings"
)

// output is psql's (or any command's) output cut into the tables it
// printed and its other lines.
type output struct {
	tables []table
	text   []string // other non-blank lines, white space collapsed
}

type table struct {
	header []string
	rows   [][]string
	line   int // index of the header among the output's lines
}

var (
	rowCountRE  = regexp.MustCompile(`^\(\d+ rows?\)$`)
	psqlWhereRE = regexp.MustCompile(`^psql:[^:]*:\d+: `)
	spaceRE     = regexp.MustCompile(`\s+`)
)

func collapse(s string) string { return strings.TrimSpace(spaceRE.ReplaceAllString(s, " ")) }

// parseOutput finds psql's aligned tables (a header line, a ---+--- line,
// rows until a blank line or "(N rows)") in lines; every other non-blank
// line is text. A row line with a cell ending in '+' continues on the next
// line, as psql prints multi-line values.
func parseOutput(lines []string) output {
	var o output
	for i := 0; i < len(lines); i++ {
		line := psqlWhereRE.ReplaceAllString(strings.TrimRight(lines[i], " "), "")
		if strings.TrimSpace(line) != "" && i+1 < len(lines) && separatorRE.MatchString(lines[i+1]) {
			tb := table{header: cells(line), line: i}
			i += 2
			continuing := false
			for ; i < len(lines); i++ {
				l := strings.TrimRight(lines[i], " ")
				if strings.TrimSpace(l) == "" || rowCountRE.MatchString(strings.TrimSpace(l)) {
					if rowCountRE.MatchString(strings.TrimSpace(l)) {
						o.text = append(o.text, strings.TrimSpace(l))
					}
					break
				}
				cs := cells(l)
				more := false
				for k, c := range cs {
					if strings.HasSuffix(c, "+") {
						cs[k] = strings.TrimSpace(strings.TrimSuffix(c, "+"))
						more = true
					}
				}
				if continuing {
					last := tb.rows[len(tb.rows)-1]
					for k := range last {
						if k < len(cs) && cs[k] != "" {
							last[k] = strings.TrimSpace(last[k] + " " + cs[k])
						}
					}
				} else {
					tb.rows = append(tb.rows, cs)
				}
				continuing = more
			}
			o.tables = append(o.tables, tb)
			continue
		}
		if t := collapse(line); t != "" {
			o.text = append(o.text, t)
		}
	}
	return o
}

// cells splits a table line at its '|' separators.
func cells(line string) []string {
	parts := strings.Split(line, "|")
	for i, p := range parts {
		parts[i] = collapse(p)
	}
	return parts
}

// volatility says which shown values may differ from run to run.
type volatility map[string]bool

func (v volatility) has(s string) bool { return v[s] }

// compareOutput checks that got has what want shows: each shown table
// (matched to the next real table with the same columns) with the same
// rows, in order when ordered, and each other shown line among the real
// lines, in order.
func compareOutput(want, got output, vol volatility, ordered bool) error {
	next := 0
	for _, wt := range want.tables {
		found := -1
		for k := next; k < len(got.tables); k++ {
			if sameHeader(wt.header, got.tables[k].header) {
				found = k
				break
			}
		}
		if found < 0 {
			return fmt.Errorf("no table with the columns %s in the output", strings.Join(wt.header, " | "))
		}
		if err := compareTable(wt, got.tables[found], vol, ordered); err != nil {
			return err
		}
		next = found + 1
	}
	k := 0
	for _, wl := range want.text {
		re := linePattern(wl, vol)
		for k < len(got.text) && !re.MatchString(got.text[k]) {
			k++
		}
		if k == len(got.text) {
			return fmt.Errorf("the line %q is not in the output (or not in this order)", wl)
		}
		k++
	}
	return nil
}

func sameHeader(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func compareTable(want, got table, vol volatility, ordered bool) error {
	if len(want.rows) != len(got.rows) {
		return fmt.Errorf("table %s: %d rows shown, %d returned:\n%s", strings.Join(want.header, " | "), len(want.rows), len(got.rows), formatRows(got))
	}
	used := make([]bool, len(got.rows))
	for i, wr := range want.rows {
		if ordered {
			if err := compareRow(want.header, wr, got.rows[i], vol); err != nil {
				return fmt.Errorf("table %s, row %d: %v", strings.Join(want.header, " | "), i+1, err)
			}
			continue
		}
		found := false
		for k, gr := range got.rows {
			if !used[k] && compareRow(want.header, wr, gr, vol) == nil {
				used[k], found = true, true
				break
			}
		}
		if !found {
			return fmt.Errorf("table %s: no returned row matches the shown row %q; returned:\n%s", strings.Join(want.header, " | "), strings.Join(wr, " | "), formatRows(got))
		}
	}
	return nil
}

func compareRow(header, want, got []string, vol volatility) error {
	if len(want) != len(got) {
		return fmt.Errorf("%d cells shown, %d returned", len(want), len(got))
	}
	for i := range want {
		if vol.has(header[i]) || want[i] == "..." {
			continue
		}
		if strings.Contains(want[i], "...") {
			if !linePattern(want[i], nil).MatchString(got[i]) {
				return fmt.Errorf("column %s: shown %q, returned %q", header[i], want[i], got[i])
			}
			continue
		}
		if want[i] != got[i] {
			return fmt.Errorf("column %s: shown %q, returned %q", header[i], want[i], got[i])
		}
	}
	return nil
}

func formatRows(t table) string {
	var b strings.Builder
	b.WriteString("  " + strings.Join(t.header, " | ") + "\n")
	for _, r := range t.rows {
		b.WriteString("  " + strings.Join(r, " | ") + "\n")
	}
	return b.String()
}

// linePattern makes a shown line a pattern: "..." matches any text, a
// volatile word any word.
func linePattern(line string, vol volatility) *regexp.Regexp {
	pat := regexp.QuoteMeta(line)
	pat = strings.ReplaceAll(pat, `\.\.\.`, `.*`)
	for w := range vol {
		q := regexp.QuoteMeta(w)
		pat = regexp.MustCompile(`(^|[^\w])`+regexp.QuoteMeta(q)+`($|[^\w])`).ReplaceAllStringFunc(pat, func(m string) string {
			return strings.Replace(m, q, `[^\s,;()]+`, 1)
		})
	}
	return regexp.MustCompile(`^` + pat + `$`)
}
