package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// A document is one markdown file cut into its level-2 sections.
type document struct {
	path     string // its path in the repository, for messages
	name     string // the file's base name: the subtest's name
	sections []*section
}

type section struct {
	title  string // "" for what comes before the first level-2 heading
	blocks []*block
}

// A block is a fenced code block, or a setup comment (kind "setup").
type block struct {
	file string
	line int    // line of the opening fence (or of the comment), 1-based
	info string // the fence's info string: "sql", "sh", "" ...
	text string // the content, without the fence's indentation
	dir  directive
}

func (b *block) where() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// directive is what a `<!-- doctest: ... -->` comment says about the
// block after it.
type directive struct {
	skip       string // the reason; set when the block is skipped
	output     bool
	outputOf   string // hidden script whose output the block is
	volatile   []string
	eventually bool
	log        bool
	file       string
	servers    bool
	restart    bool
	setup      string // hidden SQL (a setup comment, not a block's directive)
	present    bool   // a comment was there
	commentEnd int    // line of the comment's end, to check adjacency
}

var (
	fenceRE   = regexp.MustCompile("^(\\s*)(```+)\\s*([A-Za-z0-9_+-]*)\\s*$")
	headingRE = regexp.MustCompile(`^## +(.*?)\s*$`)
)

// readDocument reads the file at path; display is its path in the
// repository, for messages.
func readDocument(path, display string) (*document, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := &document{path: display, name: filepath.Base(display)}
	if err := d.parse(string(b)); err != nil {
		return nil, err
	}
	return d, nil
}

// parse cuts text into sections and blocks and attaches each directive
// comment to the block right after it.
func (d *document) parse(text string) error {
	lines := strings.Split(text, "\n")
	sec := &section{}
	d.sections = append(d.sections, sec)
	var pending *directive // a directive waiting for its block
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			indent, fence := m[1], m[2]
			b := &block{file: d.path, line: i + 1, info: m[3]}
			var body []string
			j := i + 1
			for ; j < len(lines); j++ {
				if strings.TrimSpace(lines[j]) == fence {
					break
				}
				body = append(body, strings.TrimPrefix(lines[j], indent))
			}
			if j == len(lines) {
				return fmt.Errorf("%s:%d: the block is not closed", d.path, i+1)
			}
			b.text = strings.Join(body, "\n")
			if pending != nil {
				b.dir = *pending
				pending = nil
			}
			sec.blocks = append(sec.blocks, b)
			i = j
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			if pending != nil {
				return fmt.Errorf("%s:%d: a doctest comment is not followed by a block", d.path, pending.commentEnd)
			}
			sec = &section{title: m[1]}
			d.sections = append(d.sections, sec)
			continue
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "<!-- doctest:"); ok {
			start := i
			body := rest
			for !strings.Contains(body, "-->") {
				i++
				if i == len(lines) {
					return fmt.Errorf("%s:%d: the doctest comment is not closed", d.path, start+1)
				}
				body += "\n" + lines[i]
			}
			body = body[:strings.Index(body, "-->")]
			dir, err := parseDirective(body)
			if err != nil {
				return fmt.Errorf("%s:%d: %v", d.path, start+1, err)
			}
			dir.commentEnd = i + 1
			if dir.setup != "" {
				sec.blocks = append(sec.blocks, &block{file: d.path, line: start + 1, info: "setup", text: dir.setup})
				continue
			}
			if pending != nil {
				return fmt.Errorf("%s:%d: two doctest comments for one block: join their clauses with ';'", d.path, start+1)
			}
			pending = &dir
			continue
		}
		if pending != nil && strings.TrimSpace(line) != "" {
			return fmt.Errorf("%s:%d: a doctest comment must come right before its block (only blank lines between)", d.path, pending.commentEnd)
		}
	}
	if pending != nil {
		return fmt.Errorf("%s:%d: a doctest comment is not followed by a block", d.path, pending.commentEnd)
	}
	return nil
}

// parseDirective reads the clauses of a doctest comment.
func parseDirective(body string) (directive, error) {
	dir := directive{present: true}
	rest := strings.TrimSpace(body)
	for rest != "" {
		var clause string
		switch {
		case strings.HasPrefix(rest, "output of:"):
			dir.outputOf = strings.TrimSpace(strings.TrimPrefix(rest, "output of:"))
			if dir.outputOf == "" {
				return dir, fmt.Errorf("doctest: output of: needs a script")
			}
			rest = ""
			continue
		case strings.HasPrefix(rest, "setup"):
			dir.setup = strings.TrimSpace(strings.TrimPrefix(rest, "setup"))
			if dir.setup == "" {
				return dir, fmt.Errorf("doctest: setup needs SQL")
			}
			rest = ""
			continue
		case strings.HasPrefix(rest, "skip"):
			// The reason is in parentheses and may hold ';'.
			r := strings.TrimSpace(strings.TrimPrefix(rest, "skip"))
			if !strings.HasPrefix(r, "(") || !strings.Contains(r, ")") {
				return dir, fmt.Errorf("doctest: skip needs a reason in parentheses: skip (why)")
			}
			end := strings.LastIndex(r, ")")
			dir.skip = strings.Join(strings.Fields(r[1:end]), " ")
			if dir.skip == "" {
				return dir, fmt.Errorf("doctest: skip needs a reason in parentheses: skip (why)")
			}
			rest = strings.TrimPrefix(strings.TrimSpace(r[end+1:]), ";")
			rest = strings.TrimSpace(rest)
			continue
		}
		clause, rest, _ = strings.Cut(rest, ";")
		clause, rest = strings.TrimSpace(clause), strings.TrimSpace(rest)
		word, arg, _ := strings.Cut(clause, " ")
		arg = strings.TrimSpace(arg)
		switch word {
		case "output":
			dir.output = true
		case "eventually":
			dir.eventually = true
		case "log":
			dir.log = true
		case "servers":
			dir.servers = true
		case "restart":
			dir.restart = true
		case "file":
			if arg == "" {
				return dir, fmt.Errorf("doctest: file needs a name")
			}
			dir.file = arg
		case "volatile":
			for _, v := range strings.Split(arg, ",") {
				if v = strings.TrimSpace(v); v != "" {
					dir.volatile = append(dir.volatile, v)
				}
			}
			if len(dir.volatile) == 0 {
				return dir, fmt.Errorf("doctest: volatile needs column names or words")
			}
		default:
			return dir, fmt.Errorf("doctest: unknown clause %q (skip, output, output of:, volatile, eventually, log, file, servers, restart, setup)", clause)
		}
	}
	return dir, nil
}

// A statement of a sql block or transcript, with the output the page
// shows for it.
type statement struct {
	text string   // what psql is sent
	line int      // the file line it starts on
	want []string // shown output lines, nil when none
}

// wantsError reports whether the shown output is an error.
func (s *statement) wantsError() bool {
	for _, l := range s.want {
		if strings.HasPrefix(strings.TrimSpace(l), "ERROR:") {
			return true
		}
	}
	return false
}

var separatorRE = regexp.MustCompile(`^\s*-+(\+-+)*\s*$`)

// splitSQL cuts a sql block into statements: a statement ends at a line
// whose code ends with ';', and a backslash command is one line. The
// full-line comments right after a statement are its shown output when
// they are a psql table or an error; otherwise they are comments.
func splitSQL(text string, firstLine int) []*statement {
	lines := strings.Split(text, "\n")
	var out []*statement
	var cur []string
	start := 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if len(cur) == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "--")) {
			continue
		}
		if len(cur) == 0 {
			start = i
		}
		cur = append(cur, line)
		if !strings.HasPrefix(trimmed, `\`) && !strings.HasSuffix(codeOf(trimmed), ";") {
			continue
		}
		st := &statement{text: strings.Join(cur, "\n"), line: firstLine + start}
		cur = nil
		// The comment lines that follow.
		j := i + 1
		var comments []string
		for ; j < len(lines); j++ {
			t := strings.TrimSpace(lines[j])
			if !strings.HasPrefix(t, "--") {
				break
			}
			c := strings.TrimPrefix(t, "--")
			c = strings.TrimPrefix(c, " ")
			comments = append(comments, c)
		}
		if isShownOutput(comments) {
			st.want = comments
			i = j - 1
		}
		out = append(out, st)
	}
	if len(cur) > 0 {
		out = append(out, &statement{text: strings.Join(cur, "\n"), line: firstLine + start})
	}
	return out
}

func isShownOutput(lines []string) bool {
	if len(lines) == 0 {
		return false
	}
	if strings.HasPrefix(strings.TrimSpace(lines[0]), "ERROR:") {
		return true
	}
	return len(lines) >= 2 && separatorRE.MatchString(lines[1]) && strings.TrimSpace(lines[0]) != ""
}

// codeOf strips a trailing -- comment from a line of SQL, minding
// single-quoted strings.
func codeOf(line string) string {
	inQuote := false
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\'':
			inQuote = !inQuote
		case !inQuote && strings.HasPrefix(line[i:], "--"):
			return strings.TrimSpace(line[:i])
		}
	}
	return strings.TrimSpace(line)
}

const psqlPrompt = "basin=> "

// isTranscript reports whether an untyped block is a psql transcript.
func isTranscript(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), strings.TrimSpace(psqlPrompt))
}

// splitTranscript cuts a psql transcript into its statements, each with
// the lines after it as its output.
func splitTranscript(text string, firstLine int) []*statement {
	var out []*statement
	for i, line := range strings.Split(text, "\n") {
		if s, ok := strings.CutPrefix(line, psqlPrompt); ok {
			out = append(out, &statement{text: s, line: firstLine + i, want: []string{}})
			continue
		}
		if len(out) > 0 {
			last := out[len(out)-1]
			last.want = append(last.want, line)
		}
	}
	return out
}
