package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// unit is what the metric scores separately: an attribute group (judged by its variant,
// the string of its attributes' classes) or an ungrouped attribute.
type unit struct {
	Name  string   `json:"name"`
	Attrs []string `json:"attrs"`
}

// units lists the spec's groups (in order of first appearance) and ungrouped attributes.
func units(s *taskspec.Spec) []unit {
	var out []unit
	at := map[string]int{}
	for _, a := range s.Attributes {
		if a.MultiLabel {
			continue // its findings have heads of their own, and no variant
		}
		if a.Group == "" {
			out = append(out, unit{Name: a.Name, Attrs: []string{a.Name}})
			continue
		}
		i, ok := at[a.Group]
		if !ok {
			i = len(out)
			at[a.Group] = i
			out = append(out, unit{Name: a.Group})
		}
		out[i].Attrs = append(out[i].Attrs, a.Name)
	}
	return out
}

// variant is the key of a unit's classes in a label: its attributes' class indices joined
// by "_" ("1_0_1_1").
func (u unit) variant(classes map[string]int) string {
	parts := make([]string, len(u.Attrs))
	for i, a := range u.Attrs {
		parts[i] = strconv.Itoa(classes[a])
	}
	return strings.Join(parts, "_")
}

// head is one softmax head: the attributes it predicts and, per class, their values. A
// Multi head is the sigmoid of finding Finding of a multi-label attribute (Attrs[0]):
// two classes, absent and present (multilabel.go).
type head struct {
	Name    string   `json:"name"`
	Attrs   []string `json:"attrs"`
	Classes [][]int  `json:"classes"`
	Multi   bool     `json:"multi,omitempty"`
	Finding int      `json:"finding,omitempty"`
}

// heads lays out the network's heads: per group one head over the training variants
// ("variant") or one per attribute ("attributes"); one per ungrouped attribute.
func heads(s *taskspec.Spec, mode string, labels []map[string]int) []head {
	var out []head
	for _, u := range units(s) {
		grouped := len(u.Attrs) > 1 || u.Attrs[0] != u.Name
		if !grouped || mode == "attributes" {
			for _, name := range u.Attrs {
				a, _ := s.Attribute(name)
				h := head{Name: name, Attrs: []string{name}}
				for k := range a.Classes {
					h.Classes = append(h.Classes, []int{k})
				}
				out = append(out, h)
			}
			continue
		}
		seen := map[string][]int{}
		for _, l := range labels {
			v := make([]int, len(u.Attrs))
			for i, a := range u.Attrs {
				v[i] = l[a]
			}
			seen[u.variant(l)] = v
		}
		h := head{Name: u.Name, Attrs: u.Attrs}
		for _, k := range slices.Sorted(maps.Keys(seen)) {
			h.Classes = append(h.Classes, seen[k])
		}
		if len(h.Classes) == 1 { // a softmax needs two classes; the copy is never a target
			h.Classes = append(h.Classes, h.Classes[0])
		}
		out = append(out, h)
	}
	for _, a := range s.Attributes {
		if a.MultiLabel {
			out = append(out, findingHeads(a)...)
		}
	}
	return out
}

// target is the class of label l in head h (−1 when the label's variant is not one of the
// head's, which cannot happen for training labels).
func (h head) target(l map[string]int) int32 {
	for k, v := range h.Classes {
		if slices.Equal(v, h.values(l)) {
			return int32(k)
		}
	}
	return -1
}

func (h head) values(l map[string]int) []int {
	v := make([]int, len(h.Attrs))
	for i, a := range h.Attrs {
		v[i] = l[a]
	}
	return v
}

// weights are sklearn's "balanced" class weights of each head over labels: n / (K · n_k)
// with K the classes present; 0 for classes absent from the labels.
func weights(hs []head, labels []map[string]int) [][]float64 {
	out := make([][]float64, len(hs))
	for i, h := range hs {
		count := make([]int, len(h.Classes))
		for _, l := range labels {
			if t := h.target(l); t >= 0 {
				count[t]++
			}
		}
		present := 0
		for _, c := range count {
			if c > 0 {
				present++
			}
		}
		out[i] = make([]float64, len(count))
		for k, c := range count {
			if c > 0 {
				out[i][k] = float64(len(labels)) / float64(present*c)
			}
		}
	}
	return out
}

// prior is the prediction of the prior lane: per unit the most frequent variant of the
// labels (ties: the smallest variant key).
func prior(s *taskspec.Spec, labels []map[string]int) map[string]int {
	out := map[string]int{}
	for _, u := range units(s) {
		count := map[string]int{}
		vals := map[string]map[string]int{}
		for _, l := range labels {
			k := u.variant(l)
			count[k]++
			vals[k] = l
		}
		best := ""
		for _, k := range slices.Sorted(maps.Keys(count)) {
			if best == "" || count[k] > count[best] {
				best = k
			}
		}
		for _, a := range u.Attrs {
			out[a] = vals[best][a]
		}
	}
	return out
}

// freqs are, per attribute, the share of labels in each of its classes.
func freqs(s *taskspec.Spec, labels []map[string]int) map[string][]float64 {
	if len(labels) == 0 {
		return nil
	}
	out := map[string][]float64{}
	for _, a := range s.Attributes {
		if a.MultiLabel {
			continue
		}
		n := make([]int, len(a.Classes))
		for _, l := range labels {
			if c, ok := l[a.Name]; ok && c >= 0 && c < len(n) {
				n[c]++
			}
		}
		f := make([]float64, len(n))
		for c, k := range n {
			f[c] = float64(k) / float64(len(labels))
		}
		out[a.Name] = f
	}
	return out
}

// readLabels reads the classification label of every case, checked against the spec:
// each needs a label file whose classes name every attribute, within its classes.
func readLabels(cases []protocol.Case, s *taskspec.Spec) ([]map[string]int, error) {
	out := make([]map[string]int, len(cases))
	for i, c := range cases {
		if c.Label == "" {
			return nil, fmt.Errorf("case %s has no label file", c.ID)
		}
		a, err := taskspec.ReadAnnotation(c.Label, s)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		for _, at := range s.Attributes {
			if _, ok := a.Classes[at.Name]; !ok && !at.MultiLabel {
				return nil, fmt.Errorf("case %s: label %s has no class for attribute %q", c.ID, c.Label, at.Name)
			}
		}
		out[i] = a.Classes
		if out[i] == nil {
			out[i] = map[string]int{}
		}
	}
	return out, nil
}

// score is the balanced accuracy of pred against truth per unit ("balanced_accuracy/<unit>")
// and their mean ("balanced_accuracy").
func score(s *taskspec.Spec, truth, pred []map[string]int) map[string]float64 {
	out := map[string]float64{}
	us := units(s)
	var sum float64
	for _, u := range us {
		t, p := make([]string, len(truth)), make([]string, len(truth))
		for i := range truth {
			t[i], p[i] = u.variant(truth[i]), u.variant(pred[i])
		}
		v := balanced(t, p)
		out["balanced_accuracy/"+u.Name] = v
		sum += v
	}
	out["balanced_accuracy"] = sum / float64(len(us))
	return out
}
