package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/coll"
)

// TestInfoCollAlgorithms: the coll section lists every registered
// algorithm with its attributes in JSON, and sums them up per operation in
// text.
func TestInfoCollAlgorithms(t *testing.T) {
	rep, err := collectColl(infoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*collInfo)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back collInfo
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	entries := coll.Registry().Entries()
	if len(back.Algorithms) != len(entries) {
		t.Fatalf("JSON lists %d algorithms, the registry holds %d", len(back.Algorithms), len(entries))
	}
	for i, a := range back.Algorithms {
		e := entries[i]
		if a.Name != e.Name || len(a.Attrs) != len(e.Attrs) {
			t.Fatalf("algorithm %d: %+v, registry entry %+v", i, a, e)
		}
		for _, at := range e.Attrs {
			if a.Attrs[at.Key] != at.Value {
				t.Errorf("%s: %s=%q, want %q", a.Name, at.Key, a.Attrs[at.Key], at.Value)
			}
		}
	}
	var text bytes.Buffer
	if err := r.writeText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"allreduce   33  reduce-bcast, recursive-doubling, ring, rabenseifner\n",
		"bcast       30  flat, chain, binary, binomial, knomial\n",
		"alltoallv    1  pairwise\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}
