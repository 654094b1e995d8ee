package tune

import (
	"errors"
	"reflect"
	"testing"
)

// halo is a stand-in implementation: seed 003's neighbourhood exchanges,
// named and characterised as ADCL does.
type halo struct{ partners, data string }

func haloEntry(name, partners, data string) Entry[halo] {
	return Entry[halo]{Name: name, Attrs: []Attr{{"partners", partners}, {"data", data}}, Impl: halo{partners, data}}
}

func TestRegistryAdd(t *testing.T) {
	tests := []struct {
		name  string
		entry Entry[halo]
		want  error // nil: accepted
	}{
		{"first", haloEntry("isendirecv_aao", "aao", "ddt"), nil},
		{"second", haloEntry("isendirecv_pair", "pair", "ddt"), nil},
		{"no attributes", Entry[halo]{Name: "plain"}, nil},
		{"empty name", haloEntry("", "aao", "ddt"), ErrNoName},
		{"duplicate", haloEntry("isendirecv_aao", "pair", "pack"), ErrDuplicate},
		{"attribute without key", Entry[halo]{Name: "x", Attrs: []Attr{{"", "v"}}}, ErrBadAttr},
		{"key twice", Entry[halo]{Name: "y", Attrs: []Attr{{"data", "ddt"}, {"data", "pack"}}}, ErrBadAttr},
		{"after refusals", haloEntry("isendirecv_aao_pack", "aao", "pack"), nil},
	}
	var r Registry[halo]
	var added []string
	for _, tt := range tests {
		err := r.Add(tt.entry)
		if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
			t.Fatalf("%s: Add(%q) = %v, want %v", tt.name, tt.entry.Name, err, tt.want)
		}
		if err == nil {
			added = append(added, tt.entry.Name)
		}
	}
	var got []string
	for _, e := range r.Entries() {
		got = append(got, e.Name)
	}
	if !reflect.DeepEqual(got, added) || r.Len() != len(added) {
		t.Fatalf("Entries() = %v (Len %d), want %v in registration order", got, r.Len(), added)
	}
	if e, _ := r.Lookup("isendirecv_aao"); e.Impl != (halo{"aao", "ddt"}) {
		t.Fatalf("a refused duplicate replaced the first entry: %+v", e)
	}
}

func TestRegistryLookup(t *testing.T) {
	var r Registry[halo]
	if _, ok := r.Lookup("anything"); ok || r.Len() != 0 || len(r.Entries()) != 0 {
		t.Fatal("the zero Registry is not empty")
	}
	attrs := []Attr{{"partners", "pair"}, {"data", "pack"}}
	if err := r.Add(Entry[halo]{Name: "sendrecv_pair_pack", Attrs: attrs, Impl: halo{"pair", "pack"}}); err != nil {
		t.Fatal(err)
	}
	attrs[0].Value = "changed" // the registry keeps its own copy
	tests := []struct {
		name   string
		ok     bool
		key    string
		value  string
		hasKey bool
	}{
		{"sendrecv_pair_pack", true, "partners", "pair", true},
		{"sendrecv_pair_pack", true, "data", "pack", true},
		{"sendrecv_pair_pack", true, "primitive", "", false},
		{"sendrecv_pair", false, "", "", false},
		{"", false, "", "", false},
	}
	for _, tt := range tests {
		e, ok := r.Lookup(tt.name)
		if ok != tt.ok || (ok && e.Name != tt.name) {
			t.Errorf("Lookup(%q) = %+v, %v; want found %v", tt.name, e, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		if v, has := e.Attr(tt.key); v != tt.value || has != tt.hasKey {
			t.Errorf("%s: Attr(%q) = %q, %v; want %q, %v", tt.name, tt.key, v, has, tt.value, tt.hasKey)
		}
	}
	e, _ := r.Lookup("sendrecv_pair_pack")
	if want := map[string]string{"partners": "pair", "data": "pack"}; !reflect.DeepEqual(e.AttrMap(), want) {
		t.Errorf("AttrMap() = %v, want %v", e.AttrMap(), want)
	}
}

// TestRegistrySelect runs the queries of a selector that settles one
// attribute after another (seed 003 §III).
func TestRegistrySelect(t *testing.T) {
	var r Registry[halo]
	for _, e := range []Entry[halo]{
		haloEntry("irecv_aao", "aao", "ddt"),
		haloEntry("irecv_pair", "pair", "ddt"),
		haloEntry("irecv_aao_pack", "aao", "pack"),
		haloEntry("irecv_pair_pack", "pair", "pack"),
		{Name: "unknown", Attrs: []Attr{{"data", "ddt"}}},
	} {
		if err := r.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	names := func(es []Entry[halo]) []string {
		out := []string{}
		for _, e := range es {
			out = append(out, e.Name)
		}
		return out
	}
	aao := func(e Entry[halo]) bool { v, _ := e.Attr("partners"); return v == "aao" }
	tests := []struct {
		query string
		got   []string
		want  []string
	}{
		{"With(partners, aao)", names(r.With("partners", "aao")), []string{"irecv_aao", "irecv_aao_pack"}},
		{"With(data, ddt)", names(r.With("data", "ddt")), []string{"irecv_aao", "irecv_pair", "unknown"}},
		{"With(data, none)", names(r.With("data", "none")), []string{}},
		{"With(primitive, )", names(r.With("primitive", "")), []string{}},
		{"Where(aao)", names(r.Where(aao)), []string{"irecv_aao", "irecv_aao_pack"}},
		{"Values(partners, all)", r.Values("partners", nil), []string{"aao", "pair"}},
		{"Values(data, all)", r.Values("data", nil), []string{"ddt", "pack"}},
		{"Values(data, aao)", r.Values("data", aao), []string{"ddt", "pack"}},
		{"Values(primitive, all)", r.Values("primitive", nil), nil},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("%s = %q, want %q", tt.query, tt.got, tt.want)
		}
	}
	// A filter may call back into the registry.
	nested := r.Where(func(e Entry[halo]) bool { _, ok := r.Lookup(e.Name); return ok && r.Len() > 0 })
	if len(nested) != r.Len() {
		t.Errorf("a filter calling Lookup kept %d of %d entries", len(nested), r.Len())
	}
}
