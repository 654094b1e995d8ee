package driver

import (
	"slices"
	"testing"
)

// TestMethodNamed: every named method is found by its name; the default
// and unknown words are not.
func TestMethodNamed(t *testing.T) {
	tests := []struct {
		name string
		want Method
		ok   bool
	}{
		{"copy", MethodCopy, true},
		{"cachefree", MethodCacheFree, true},
		{"vmsplice", MethodVmsplice, true},
		{"default", MethodDefault, false},
		{"cma", MethodDefault, false}, // a pull, not a Put method
		{"", MethodDefault, false},
	}
	for _, tc := range tests {
		m, ok := MethodNamed(tc.name)
		if m != tc.want || ok != tc.ok {
			t.Errorf("MethodNamed(%q) = %v, %v; want %v, %v", tc.name, m, ok, tc.want, tc.ok)
		}
		if ok && m.String() != tc.name {
			t.Errorf("%v.String() = %q, want %q", m, m.String(), tc.name)
		}
	}
	if s := Method(200).String(); s != "method(200)" {
		t.Errorf("Method(200).String() = %q", s)
	}
}

// TestCommonMethods: what every rail offers, whatever order each lists
// its methods in.
func TestCommonMethods(t *testing.T) {
	rail := func(ms ...Method) Caps { return Caps{Methods: ms} }
	tests := []struct {
		name  string
		rails []Caps
		want  []Method
	}{
		{"no rails", nil, nil},
		{"one rail", []Caps{rail(MethodCopy, MethodVmsplice)}, []Method{MethodCopy, MethodVmsplice}},
		{"other orders", []Caps{rail(MethodCopy, MethodCacheFree, MethodVmsplice), rail(MethodVmsplice, MethodCopy)}, []Method{MethodCopy, MethodVmsplice}},
		{"a rail with none", []Caps{rail(MethodCopy), rail()}, []Method{}},
	}
	for _, tc := range tests {
		got := CommonMethods(tc.rails)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := MethodNames([]Method{MethodVmsplice, MethodCopy}); !slices.Equal(got, []string{"vmsplice", "copy"}) {
		t.Errorf("MethodNames = %v", got)
	}
}
