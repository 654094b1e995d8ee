package tune

import (
	"errors"
	"fmt"
	"sync"
)

// Registry is the table of the implementations a decision may choose from,
// one Entry each: a stable name, the attributes that characterise it, and
// the implementation itself (for collectives, an algorithm that builds its
// schedule; later, the halo exchanges of an application).
//
// It is what the selection layer sees. Selectors reason on names and
// attributes, never on the implementations: seed 001 §3 describes a
// collective by its tree shape, fan-out and segment size, and seed 003
// §II–III (ADCL) describes a neighbourhood exchange by its number of
// simultaneous partners (aao/pair), its data handling (ddt/pack) and its
// transfer primitive, then prunes the implementations whose attribute
// differs from the value its performance hypotheses confirmed. Adding a
// variant is adding an entry; no selector changes.
//
// The zero value is an empty registry ready to use. A Registry is safe for
// concurrent use. The entries it returns share their Attrs, which must not
// be modified.
type Registry[T any] struct {
	mu      sync.RWMutex
	entries []Entry[T]
	index   map[string]int // name → position in entries
}

// Entry is one implementation in a Registry.
type Entry[T any] struct {
	// Name is the stable name of the implementation: unique in its
	// registry, persisted in saved selector state and typed by users, so
	// it never changes once published.
	Name string
	// Attrs are the implementation's attributes, in the order a report
	// prints them. Keys are unique within an entry.
	Attrs []Attr
	// Impl is the implementation itself.
	Impl T
}

// Attr is one attribute of an implementation, e.g. {"shape", "binomial"}
// or {"seg", "16K"}. Values are text so that selectors compare any kind of
// attribute the same way.
type Attr struct {
	Key, Value string
}

// Errors of Registry.Add.
var (
	// ErrNoName: an entry without a name.
	ErrNoName = errors.New("tune: entry has no name")
	// ErrDuplicate: a second entry of the same name.
	ErrDuplicate = errors.New("tune: duplicate entry")
	// ErrBadAttr: an attribute without a key, or a key given twice.
	ErrBadAttr = errors.New("tune: bad attribute")
)

// Attr returns the value of e's attribute key, and whether e has it.
func (e Entry[T]) Attr(key string) (string, bool) {
	for _, a := range e.Attrs {
		if a.Key == key {
			return a.Value, true
		}
	}
	return "", false
}

// AttrMap returns e's attributes as a map, e.g. for a JSON report.
func (e Entry[T]) AttrMap() map[string]string {
	m := make(map[string]string, len(e.Attrs))
	for _, a := range e.Attrs {
		m[a.Key] = a.Value
	}
	return m
}

// Add registers e after the entries already there. It refuses an entry
// without a name (ErrNoName), a name already registered (ErrDuplicate),
// and an attribute without a key or a key given twice (ErrBadAttr).
func (r *Registry[T]) Add(e Entry[T]) error {
	if e.Name == "" {
		return ErrNoName
	}
	for i, a := range e.Attrs {
		if a.Key == "" {
			return fmt.Errorf("%s: attribute %d: %w: no key", e.Name, i, ErrBadAttr)
		}
		for _, b := range e.Attrs[:i] {
			if b.Key == a.Key {
				return fmt.Errorf("%s: %w: %q given twice", e.Name, ErrBadAttr, a.Key)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.index[e.Name]; ok {
		return fmt.Errorf("%w: %s", ErrDuplicate, e.Name)
	}
	if r.index == nil {
		r.index = map[string]int{}
	}
	e.Attrs = append([]Attr(nil), e.Attrs...) // the caller's slice stays theirs
	r.index[e.Name] = len(r.entries)
	r.entries = append(r.entries, e)
	return nil
}

// Lookup returns the entry named name, and whether there is one.
func (r *Registry[T]) Lookup(name string) (Entry[T], bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	i, ok := r.index[name]
	if !ok {
		return Entry[T]{}, false
	}
	return r.entries[i], true
}

// Len returns the number of entries.
func (r *Registry[T]) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.entries)
}

// Entries returns every entry in registration order, in a new slice.
func (r *Registry[T]) Entries() []Entry[T] {
	return r.Where(func(Entry[T]) bool { return true })
}

// Where returns the entries keep accepts, in registration order.
func (r *Registry[T]) Where(keep func(Entry[T]) bool) []Entry[T] {
	var out []Entry[T]
	for _, e := range r.snapshot() {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// With returns the entries whose attribute key has the value value, in
// registration order: what a selector keeps once it has settled an
// attribute (seed 003 §III removes every implementation that lacks the
// confirmed value).
func (r *Registry[T]) With(key, value string) []Entry[T] {
	return r.Where(func(e Entry[T]) bool {
		v, ok := e.Attr(key)
		return ok && v == value
	})
}

// Values returns the distinct values of attribute key among the entries
// keep accepts (nil: every entry), in the order they first appear: the
// values a selector chooses among when it settles that attribute (seed
// 003 §III's n(i)).
func (r *Registry[T]) Values(key string, keep func(Entry[T]) bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range r.snapshot() {
		if keep != nil && !keep(e) {
			continue
		}
		if v, ok := e.Attr(key); ok && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// snapshot returns the entries registered so far. Add only appends, so the
// slice stays valid without the lock, and filters may call back into r.
func (r *Registry[T]) snapshot() []Entry[T] {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.entries[:len(r.entries):len(r.entries)]
}
