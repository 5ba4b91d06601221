package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Settings come from four places, first set wins: the flag, the BASIN_*
// environment variable, the config file, the default. viper merges them
// but converts leniently (GetInt of "lots" is 0, GetDuration of
// "forever" is 0, and 0 means the default to node.Options), and ignores
// config keys it does not know. So before anything reads a setting,
// settings checks every BASIN_* variable and config key of the command
// the way pflag checks a flag's argument, and refuses a key that is no
// setting, naming the nearest one.

// noFlagKeys are the settings of a command that have no flag: a
// config-file key and a BASIN_* variable only (passwords on a command
// line are visible to every local user).
var noFlagKeys = map[string][]string{
	"serve": {"users", "cluster-secret", "schema-registry-password"},
}

var envReplacer = strings.NewReplacer("-", "_", ".", "_")

// envName is the environment variable of a setting.
func envName(key string) string { return "BASIN_" + strings.ToUpper(envReplacer.Replace(key)) }

// settings binds a command's flags to BASIN_* environment variables and
// the config file: flag > environment > config file > default. It
// returns an error for a variable or config value its setting cannot
// take and for a config key that is no setting.
func settings(cmd *cobra.Command) (*viper.Viper, error) {
	v := viper.New()
	v.SetEnvPrefix("BASIN")
	v.SetEnvKeyReplacer(envReplacer)
	v.AutomaticEnv()
	if err := v.BindPFlags(cmd.Flags()); err != nil {
		return nil, err
	}
	if err := checkEnv(cmd); err != nil {
		return nil, err
	}
	if path := v.GetString("config"); path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("reading config file %s: %w", path, err)
		}
		// The file alone, to see its keys and values as written: v's
		// view is merged with the flags and the environment.
		file := viper.New()
		file.SetConfigFile(path)
		if err := file.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("reading config file %s: %w", path, err)
		}
		if err := checkConfig(cmd, path, file.AllSettings()); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// checkEnv checks the BASIN_* variable of every flag of cmd. An empty
// variable counts as unset, as viper takes it.
func checkEnv(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		name := envName(f.Name)
		if s := os.Getenv(name); s != "" && err == nil && f.Name != "help" {
			if !validValue(f, s) {
				err = fmt.Errorf("%s: %q is not valid: %s", name, s, expected(f))
			}
		}
	})
	return err
}

// checkConfig checks the keys and values of a config file (as viper
// read it: keys in lower case) against cmd's settings.
func checkConfig(cmd *cobra.Command, path string, values map[string]any) error {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first bad key in a stable order
	for _, k := range keys {
		raw := values[k]
		f := cmd.Flags().Lookup(k)
		switch {
		case k == "config":
			return fmt.Errorf("config file %s: config: a config file cannot name another; give --config or BASIN_CONFIG", path)
		case f != nil && f.Name != "help":
			if err := checkConfigValue(f, raw); err != nil {
				return fmt.Errorf("config file %s: %s: %w", path, k, err)
			}
		case slices.Contains(noFlagKeys[cmd.Name()], k):
			// Read by usersSetting and as a string: only their shape is
			// checked here.
			switch _, isMap := raw.(map[string]any); {
			case k == "users" && !isMap:
				return fmt.Errorf("config file %s: users: %s is not valid: users takes a map of user name to password or SCRAM verifier",
					path, show(raw))
			case k == "cluster-secret" || k == "schema-registry-password":
				if _, ok := raw.(string); !ok {
					return fmt.Errorf("config file %s: %s: %s is not valid: %s takes a string; quote it", path, k, show(raw), k)
				}
			}
		default:
			return unknownKey(cmd, path, k)
		}
	}
	return nil
}

// unknownKey is the error for a config key that is no setting of cmd.
func unknownKey(cmd *cobra.Command, path, key string) error {
	valid := configKeys(cmd)
	best, bestDist := "", math.MaxInt
	for _, k := range valid {
		if d := editDistance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if bestDist <= max(2, len(key)/3) {
		return fmt.Errorf("config file %s: unknown key %q: did you mean %q?", path, key, best)
	}
	return fmt.Errorf("config file %s: unknown key %q: basin %s takes %s", path, key, cmd.Name(), strings.Join(valid, ", "))
}

// configKeys are the keys a config file for cmd may hold, sorted.
func configKeys(cmd *cobra.Command) []string {
	var keys []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "config" && f.Name != "help" {
			keys = append(keys, f.Name)
		}
	})
	keys = append(keys, noFlagKeys[cmd.Name()]...)
	sort.Strings(keys)
	return keys
}

// checkConfigValue checks a value as the config file's parser gave it:
// YAML and TOML numbers are ints or floats, JSON numbers floats.
func checkConfigValue(f *pflag.Flag, raw any) error {
	ok := false
	switch x := raw.(type) {
	case string:
		ok = validValue(f, x)
	case bool:
		ok = validValue(f, strconv.FormatBool(x))
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		ok = validValue(f, fmt.Sprint(x))
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			ok = validValue(f, strconv.FormatInt(int64(x), 10))
		} else {
			ok = validValue(f, strconv.FormatFloat(x, 'g', -1, 64))
		}
	case []any:
		ok = f.Name == "brokers"
		for _, b := range x {
			if _, isString := b.(string); !isString {
				ok = false
			}
		}
	}
	if !ok {
		return fmt.Errorf("%s is not valid: %s", show(raw), expected(f))
	}
	return nil
}

// validValue reports whether the flag f would take s as its argument.
func validValue(f *pflag.Flag, s string) bool {
	var err error
	switch f.Value.Type() {
	case "int":
		_, err = strconv.ParseInt(s, 0, strconv.IntSize)
	case "int64":
		_, err = strconv.ParseInt(s, 0, 64)
	case "duration":
		_, err = time.ParseDuration(s)
	case "bool":
		_, err = strconv.ParseBool(s)
	}
	return err == nil
}

// expected says what a setting takes, as the flag does.
func expected(f *pflag.Flag) string {
	var what string
	switch f.Value.Type() {
	case "int", "int64":
		what = "a whole number"
	case "duration":
		what = "a duration with a unit, such as 500ms, 6s or 1m30s"
	case "bool":
		what = "true or false"
	default:
		what = "a string"
		if f.Name == "brokers" {
			what = "host:port,host:port (or, in a config file, a list)"
		}
	}
	s := fmt.Sprintf("%s takes %s, as --%s does", f.Name, what, f.Name)
	if f.DefValue != "" {
		s += fmt.Sprintf(" (default %s)", f.DefValue)
	}
	return s
}

// show prints a config value in an error.
func show(raw any) string {
	switch x := raw.(type) {
	case string:
		return strconv.Quote(x)
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	}
	return fmt.Sprint(raw)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// describeSettings appends to each flag's usage its environment
// variable and config key, for --help.
func describeSettings(cmd *cobra.Command) {
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "config" {
			f.Usage += fmt.Sprintf(" (env %s)", envName(f.Name))
			return
		}
		f.Usage += fmt.Sprintf(" (env %s, config %s)", envName(f.Name), f.Name)
	})
}
