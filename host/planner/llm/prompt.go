package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"amid/host/planner"
	"amid/plugins/protocol/schema"
)

// MaxLanes is the most lanes one reply may add; further lanes are dropped.
const MaxLanes = 16

// ReplySchema is the JSON Schema a reply must match. Lane configurations are objects whose
// schema is the plugin's own, so the schema is not strict; every reply is checked here.
var ReplySchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "lanes": {
      "type": "array",
      "minItems": 1,
      "items": {
        "type": "object",
        "properties": {
          "name": {"type": "string", "description": "short lane name: lower-case letters, digits and dashes"},
          "plugin": {"type": "string", "description": "one of the plugin names offered"},
          "config": {"type": "object", "description": "a configuration valid against that plugin's config_schema"},
          "rationale": {"type": "string", "description": "one or two sentences on why this lane"}
        },
        "required": ["name", "plugin", "config", "rationale"],
        "additionalProperties": false
      }
    }
  },
  "required": ["lanes"],
  "additionalProperties": false
}`)

const systemPrompt = `You plan training runs for a medical-imaging model developer.
You receive a task (what to predict and how it is scored), a dataset fingerprint (statistics only),
the plugins that can train the task (each with its JSON Schema for configurations and the candidates
it proposes itself), the lanes trained so far with their validation scores, and the time budget.
Propose method lanes, best first: each a plugin and a configuration valid against that plugin's
config_schema. Start from the plugins' candidates and adapt them to the fingerprint; diversify
while nothing is trained; once results exist, refine what scored best and drop what failed.
Never repeat a configuration already trained. Propose at most %d lanes; %d can train at once.
Reply with one JSON object and nothing else, matching this JSON Schema:
%s`

// payload is what the user message carries: everything has passed through the scrubber.
type payload struct {
	Task             json.RawMessage `json:"task"`
	Kind             string          `json:"kind"`
	Dims             int             `json:"dims"`
	Metric           string          `json:"metric"`
	HigherIsBetter   bool            `json:"higher_is_better"`
	Fingerprint      json.RawMessage `json:"fingerprint"`
	Plugins          []pluginDoc     `json:"plugins"`
	Results          []resultDoc     `json:"results,omitempty"`
	BudgetSeconds    float64         `json:"budget_seconds"`
	RemainingSeconds float64         `json:"remaining_seconds"`
	Slots            int             `json:"slots"`
}

type pluginDoc struct {
	Name         string          `json:"name"`
	ConfigSchema json.RawMessage `json:"config_schema"`
	Candidates   []candidateDoc  `json:"candidates"`
}

type candidateDoc struct {
	Name      string          `json:"name"`
	Config    json.RawMessage `json:"config"`
	Rationale string          `json:"rationale,omitempty"`
}

type resultDoc struct {
	Lane        string          `json:"lane"`
	Plugin      string          `json:"plugin"`
	Config      json.RawMessage `json:"config"`
	Score       *float64        `json:"score"` // null when none
	Folds       int             `json:"folds"`
	Status      string          `json:"status"`
	Reason      string          `json:"reason,omitempty"`
	TookSeconds float64         `json:"took_seconds"`
}

// build turns the input into the user message: every string, document and fingerprint
// passes through the scrubber, and only the fields listed in payload are carried.
func build(s *Scrubber, in planner.Input) (json.RawMessage, Report, error) {
	var rep Report
	text := func(v string) string {
		t, n := s.Text(v)
		rep.Redacted += n
		return t
	}
	doc := func(v json.RawMessage) json.RawMessage {
		d, r := s.Document(v)
		rep.add(r)
		return d
	}
	p := payload{
		Kind: text(in.Kind), Dims: in.Dims, Metric: text(in.Metric), HigherIsBetter: in.HigherIsBetter,
		Task:             doc(in.Task),
		BudgetSeconds:    in.Budget.Seconds(),
		RemainingSeconds: in.Remaining.Seconds(),
		Slots:            in.Slots,
	}
	// The fingerprint may name classes and attributes the task definition names.
	fp, r := s.withWords(append(jsonStrings(p.Task), p.Kind, p.Metric)).Fingerprint(in.Fingerprint)
	rep.add(r)
	p.Fingerprint = fp
	for _, pl := range in.Plugins {
		d := pluginDoc{Name: text(pl.Name), ConfigSchema: doc(pl.Schema), Candidates: []candidateDoc{}}
		for _, c := range pl.Candidates {
			d.Candidates = append(d.Candidates, candidateDoc{Name: text(c.Name), Config: doc(c.Config), Rationale: text(c.Rationale)})
		}
		p.Plugins = append(p.Plugins, d)
	}
	for _, res := range in.Results {
		d := resultDoc{Lane: text(res.Lane), Plugin: text(res.Plugin), Config: doc(res.Config), Folds: res.Folds,
			Status: text(res.Status), Reason: text(res.Reason), TookSeconds: res.Took.Seconds()}
		if !math.IsNaN(res.Score) && !math.IsInf(res.Score, 0) {
			sc := res.Score
			d.Score = &sc
		}
		p.Results = append(p.Results, d)
	}
	b, err := marshal(p)
	if err != nil {
		return nil, rep, fmt.Errorf("llm request: %w", err)
	}
	if err := s.Leaks(b); err != nil {
		return nil, rep, fmt.Errorf("llm request refused: %w", err)
	}
	return b, rep, nil
}

// system returns the system message for an input.
func system(in planner.Input) string {
	slots := max(in.Slots, 1)
	return fmt.Sprintf(systemPrompt, min(max(2*slots, 4), MaxLanes), slots, ReplySchema)
}

// dropped is a lane taken out of a reply, and why.
type dropped struct {
	Lane, Plugin, Reason string
}

// offer is what a reply is checked against: the plugins' compiled schemas and the
// configurations already trained.
type offer struct {
	schemas map[string]*schema.Schema
	bad     map[string]error // plugins whose schema does not compile
	names   []string
	trained map[string]string // plugin + canonical config -> lane
	lanes   map[string]bool   // lane names taken
}

func newOffer(in planner.Input) *offer {
	o := &offer{schemas: map[string]*schema.Schema{}, bad: map[string]error{}, trained: map[string]string{}, lanes: map[string]bool{}}
	for _, p := range in.Plugins {
		o.names = append(o.names, p.Name)
		s, err := schema.Compile(p.Schema)
		if err != nil {
			o.bad[p.Name] = err
			continue
		}
		o.schemas[p.Name] = s
	}
	sort.Strings(o.names)
	for _, r := range in.Results {
		o.lanes[r.Lane] = true
		if c, err := canonical(r.Config); err == nil {
			o.trained[r.Plugin+"\x00"+c] = r.Lane
		}
	}
	return o
}

// replyDoc is the shape a reply decodes into.
type replyDoc struct {
	Lanes []struct {
		Name      string          `json:"name"`
		Plugin    string          `json:"plugin"`
		Config    json.RawMessage `json:"config"`
		Rationale string          `json:"rationale"`
	} `json:"lanes"`
}

// parse checks a reply: the lanes it keeps, those it drops with reasons, and an error when
// the reply is not JSON or keeps no lane (that error is what the retry feeds back).
func (o *offer) parse(content string) ([]planner.Lane, []dropped, error) {
	body := extractJSON(content)
	var r replyDoc
	d := json.NewDecoder(strings.NewReader(body))
	if err := d.Decode(&r); err != nil {
		return nil, nil, fmt.Errorf("reply is not a JSON object matching the schema: %w", err)
	}
	if len(r.Lanes) == 0 {
		return nil, nil, fmt.Errorf("reply has no lanes: the object needs a non-empty \"lanes\" array")
	}
	var (
		lanes []planner.Lane
		drops []dropped
		seen  = map[string]string{}
		taken = map[string]bool{}
	)
	for k := range o.lanes {
		taken[k] = true
	}
	for i, l := range r.Lanes {
		label := l.Name
		if label == "" {
			label = fmt.Sprintf("#%d", i+1)
		}
		drop := func(format string, a ...any) {
			drops = append(drops, dropped{Lane: label, Plugin: l.Plugin, Reason: fmt.Sprintf(format, a...)})
		}
		if len(lanes) == MaxLanes {
			drop("more than %d lanes", MaxLanes)
			continue
		}
		s, ok := o.schemas[l.Plugin]
		if !ok {
			if err, bad := o.bad[l.Plugin]; bad {
				drop("plugin %q has a config schema that does not compile: %v", l.Plugin, err)
			} else {
				drop("plugin %q is not offered (offered: %s)", l.Plugin, strings.Join(o.names, ", "))
			}
			continue
		}
		cfg := bytes.TrimSpace(l.Config)
		if len(cfg) == 0 || string(cfg) == "null" {
			drop("config is missing")
			continue
		}
		if err := s.Check(cfg); err != nil {
			drop("config: %s", schemaReason(err))
			continue
		}
		c, err := canonical(cfg)
		if err != nil {
			drop("config: %v", err)
			continue
		}
		if lane, ok := o.trained[l.Plugin+"\x00"+c]; ok {
			drop("same configuration as lane %q, already trained", lane)
			continue
		}
		if lane, ok := seen[l.Plugin+"\x00"+c]; ok {
			drop("same configuration as lane %q of this reply", lane)
			continue
		}
		name := uniqueName(laneName(l.Name, l.Plugin, i), taken)
		taken[name] = true
		seen[l.Plugin+"\x00"+c] = name
		lanes = append(lanes, planner.Lane{Name: name, Plugin: l.Plugin, Config: json.RawMessage(c), Rationale: clip(strings.TrimSpace(l.Rationale), 1000)})
	}
	if len(lanes) == 0 {
		var why []string
		for _, d := range drops {
			why = append(why, fmt.Sprintf("lane %s: %s", d.Lane, d.Reason))
		}
		return nil, drops, fmt.Errorf("reply has no valid lane: %s", strings.Join(why, "; "))
	}
	return lanes, drops, nil
}

// schemaReason rewrites a schema validation error for the reply's author: one clause per
// violation, located by a dotted path under "config", without the schema's resource URL
// (a file URL under the working folder, which a request must not carry).
func schemaReason(err error) string {
	lines := strings.Split(err.Error(), "\n")
	var out []string
	for _, l := range lines[1:] {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "-"))
		rest, ok := strings.CutPrefix(l, "at '")
		if !ok {
			continue
		}
		ptr, msg, ok := strings.Cut(rest, "': ")
		if !ok {
			continue
		}
		loc := "config"
		if ptr != "" {
			loc += strings.ReplaceAll(ptr, "/", ".")
		}
		out = append(out, loc+": "+msg)
	}
	head, _, _ := strings.Cut(lines[0], ": jsonschema")
	if len(out) == 0 {
		return head
	}
	return head + ": " + strings.Join(out, "; ")
}

// extractJSON returns the JSON object of a reply, without the Markdown fence or the prose
// some models put around it.
func extractJSON(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") {
		return s
	}
	i, j := strings.Index(s, "{"), strings.LastIndex(s, "}")
	if i < 0 || j < i {
		return s
	}
	return s[i : j+1]
}

// canonical re-encodes a JSON value with sorted keys and no spaces.
func canonical(b []byte) (string, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", fmt.Errorf("not JSON: %w", err)
	}
	out, err := marshal(v)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// laneName makes a lane name of lower-case letters, digits, '.', '_' and '-': the reply's
// name, else the plugin's name and the lane's position.
func laneName(name, plugin string, i int) string {
	if n := sanitize(name); n != "" {
		return n
	}
	n := sanitize(plugin)
	if n == "" {
		n = "lane"
	}
	return fmt.Sprintf("%s-%d", n, i+1)
}

func sanitize(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(name)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	n := strings.Trim(b.String(), "-._")
	if len(n) > 48 {
		n = strings.Trim(n[:48], "-._")
	}
	return n
}

func uniqueName(n string, taken map[string]bool) string {
	if !taken[n] {
		return n
	}
	for k := 2; ; k++ {
		if c := fmt.Sprintf("%s-%d", n, k); !taken[c] {
			return c
		}
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
