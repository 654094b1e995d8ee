package commtune

import (
	"cmp"
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// infoMethods are the methods of *Comm that return no error: on a nil
// communicator they return the documented neutral value (checked in
// TestNilAndClosedComm), never panic.
var infoMethods = []string{"Close", "Group", "Profile", "Rank", "Revoked", "Size", "Stats", "Transport", "WorldRank"}

// exitMethods end the process by design and are not called here: the
// conformance suite runs Abort in jobs (TestAbortCommtuneRun, …).
var exitMethods = []string{"Abort"}

// commFuncs calls every exported function of the package that takes a
// *Comm, on c, with arguments that are valid but for the communicator.
// TestCommFuncsListed keeps it complete.
var commFuncs = map[string]func(ctx context.Context, c *Comm) error{
	"Allgather": func(ctx context.Context, c *Comm) error { return Allgather(ctx, c, []int32{1}, []int32{1, 2}) },
	"Allgatherv": func(ctx context.Context, c *Comm) error {
		return Allgatherv(ctx, c, []int32{1}, []int32{1, 2}, []int{1, 1}, []int{0, 1})
	},
	"Allreduce": func(ctx context.Context, c *Comm) error { return Allreduce(ctx, c, []int32{1}, []int32{0}, Sum) },
	"Alltoall":  func(ctx context.Context, c *Comm) error { return Alltoall(ctx, c, []int32{1, 2}, []int32{0, 0}) },
	"SendValue": func(ctx context.Context, c *Comm) error { return SendValue(ctx, c, "v", 0, 0) },
	"RecvValue": func(ctx context.Context, c *Comm) error { _, _, err := RecvValue[string](ctx, c, 0, 0); return err },
	"BcastValue": func(ctx context.Context, c *Comm) error {
		_, err := BcastValue(ctx, c, "v", 0)
		return err
	},
	"GatherValues": func(ctx context.Context, c *Comm) error {
		_, err := GatherValues(ctx, c, "v", 0)
		return err
	},
	"AllgatherValues": func(ctx context.Context, c *Comm) error {
		_, err := AllgatherValues(ctx, c, "v")
		return err
	},
	"ScatterValues": func(ctx context.Context, c *Comm) error {
		_, err := ScatterValues(ctx, c, []string{"a"}, 0)
		return err
	},
	"AlltoallValues": func(ctx context.Context, c *Comm) error {
		_, err := AlltoallValues(ctx, c, []string{"a"})
		return err
	},
	"ReduceValue": func(ctx context.Context, c *Comm) error {
		_, err := ReduceValue(ctx, c, 1, func(a, b int) int { return a + b }, 0)
		return err
	},
	"Alltoallv": func(ctx context.Context, c *Comm) error {
		return Alltoallv(ctx, c, []int32{1, 2}, []int{1, 1}, []int{0, 1}, []int32{0, 0}, []int{1, 1}, []int{0, 1})
	},
	"Bcast":  func(ctx context.Context, c *Comm) error { return Bcast(ctx, c, []int32{1}, 0) },
	"Gather": func(ctx context.Context, c *Comm) error { return Gather(ctx, c, []int32{1}, []int32{0, 0}, 0) },
	"Gatherv": func(ctx context.Context, c *Comm) error {
		return Gatherv(ctx, c, []int32{1}, []int32{0, 0}, []int{1, 1}, []int{0, 1}, 0)
	},
	"Reduce": func(ctx context.Context, c *Comm) error { return Reduce(ctx, c, []int32{1}, []int32{0}, Sum, 0) },
	"ReduceScatterBlock": func(ctx context.Context, c *Comm) error {
		return ReduceScatterBlock(ctx, c, []int32{1, 2}, []int32{0}, Sum)
	},
	"ReduceScatter": func(ctx context.Context, c *Comm) error {
		return ReduceScatter(ctx, c, []int32{1, 2}, []int32{0}, []int{1, 1}, Sum)
	},
	"Scan":    func(ctx context.Context, c *Comm) error { return Scan(ctx, c, []int32{1}, []int32{0}, Sum) },
	"Exscan":  func(ctx context.Context, c *Comm) error { return Exscan(ctx, c, []int32{1}, []int32{0}, Sum) },
	"Scatter": func(ctx context.Context, c *Comm) error { return Scatter(ctx, c, []int32{1, 2}, []int32{0}, 0) },
	"Scatterv": func(ctx context.Context, c *Comm) error {
		return Scatterv(ctx, c, []int32{1, 2}, []int{1, 1}, []int{0, 1}, []int32{0}, 0)
	},
	"SendSlice": func(ctx context.Context, c *Comm) error { return SendSlice(ctx, c, []int32{1}, 0, 0) },
	"RecvSlice": func(ctx context.Context, c *Comm) error { _, err := RecvSlice(ctx, c, []int32{0}, 0, 0); return err },
	"IsendSlice": func(ctx context.Context, c *Comm) error {
		_, err := IsendSlice(c, []int32{1}, 0, 0)
		return err
	},
	"IrecvSlice": func(ctx context.Context, c *Comm) error {
		_, err := IrecvSlice(c, []int32{0}, 0, 0)
		return err
	},
	"SsendSlice": func(ctx context.Context, c *Comm) error { return SsendSlice(ctx, c, []int32{1}, 0, 0) },
	"NewWindow": func(ctx context.Context, c *Comm) error {
		_, err := NewWindow(ctx, c, []int64{0})
		return err
	},
	"AllocWindow": func(ctx context.Context, c *Comm) error {
		_, err := AllocWindow[int64](ctx, c, 1)
		return err
	},
	"IssendSlice": func(ctx context.Context, c *Comm) error {
		_, err := IssendSlice(c, []int32{1}, 0, 0)
		return err
	},
	"SendrecvReplaceSlice": func(ctx context.Context, c *Comm) error {
		_, err := SendrecvReplaceSlice(ctx, c, []int32{1}, 0, 0, 0, 0)
		return err
	},
	"Iallgather": func(ctx context.Context, c *Comm) error {
		_, err := Iallgather(ctx, c, []int32{1}, []int32{1, 2})
		return err
	},
	"Iallgatherv": func(ctx context.Context, c *Comm) error {
		_, err := Iallgatherv(ctx, c, []int32{1}, []int32{1, 2}, []int{1, 1}, []int{0, 1})
		return err
	},
	"Iallreduce": func(ctx context.Context, c *Comm) error {
		_, err := Iallreduce(ctx, c, []int32{1}, []int32{0}, Sum)
		return err
	},
	"Ialltoall": func(ctx context.Context, c *Comm) error {
		_, err := Ialltoall(ctx, c, []int32{1, 2}, []int32{0, 0})
		return err
	},
	"Ialltoallv": func(ctx context.Context, c *Comm) error {
		_, err := Ialltoallv(ctx, c, []int32{1, 2}, []int{1, 1}, []int{0, 1}, []int32{0, 0}, []int{1, 1}, []int{0, 1})
		return err
	},
	"Ibcast": func(ctx context.Context, c *Comm) error { _, err := Ibcast(ctx, c, []int32{1}, 0); return err },
	"Igather": func(ctx context.Context, c *Comm) error {
		_, err := Igather(ctx, c, []int32{1}, []int32{0, 0}, 0)
		return err
	},
	"Igatherv": func(ctx context.Context, c *Comm) error {
		_, err := Igatherv(ctx, c, []int32{1}, []int32{0, 0}, []int{1, 1}, []int{0, 1}, 0)
		return err
	},
	"Ireduce": func(ctx context.Context, c *Comm) error {
		_, err := Ireduce(ctx, c, []int32{1}, []int32{0}, Sum, 0)
		return err
	},
	"IreduceScatterBlock": func(ctx context.Context, c *Comm) error {
		_, err := IreduceScatterBlock(ctx, c, []int32{1, 2}, []int32{0}, Sum)
		return err
	},
	"IreduceScatter": func(ctx context.Context, c *Comm) error {
		_, err := IreduceScatter(ctx, c, []int32{1, 2}, []int32{0}, []int{1, 1}, Sum)
		return err
	},
	"Iscan": func(ctx context.Context, c *Comm) error {
		_, err := Iscan(ctx, c, []int32{1}, []int32{0}, Sum)
		return err
	},
	"Iexscan": func(ctx context.Context, c *Comm) error {
		_, err := Iexscan(ctx, c, []int32{1}, []int32{0}, Sum)
		return err
	},
	"Iscatter": func(ctx context.Context, c *Comm) error {
		_, err := Iscatter(ctx, c, []int32{1, 2}, []int32{0}, 0)
		return err
	},
	"Iscatterv": func(ctx context.Context, c *Comm) error {
		_, err := Iscatterv(ctx, c, []int32{1, 2}, []int{1, 1}, []int{0, 1}, []int32{0}, 0)
		return err
	},
	"SendInitSlice": func(ctx context.Context, c *Comm) error { _, err := SendInitSlice(c, []int32{1}, 0, 0); return err },
	"RecvInitSlice": func(ctx context.Context, c *Comm) error { _, err := RecvInitSlice(c, []int32{0}, 0, 0); return err },
	"BcastInit":     func(ctx context.Context, c *Comm) error { _, err := BcastInit(c, []int32{1}, 0); return err },
	"ReduceInit": func(ctx context.Context, c *Comm) error {
		_, err := ReduceInit(c, []int32{1}, []int32{0}, Sum, 0)
		return err
	},
	"AllreduceInit": func(ctx context.Context, c *Comm) error {
		_, err := AllreduceInit(c, []int32{1}, []int32{0}, Sum)
		return err
	},
	"ReduceScatterBlockInit": func(ctx context.Context, c *Comm) error {
		_, err := ReduceScatterBlockInit(c, []int32{1, 2}, []int32{0}, Sum)
		return err
	},
	"ReduceScatterInit": func(ctx context.Context, c *Comm) error {
		_, err := ReduceScatterInit(c, []int32{1, 2}, []int32{0}, []int{1, 1}, Sum)
		return err
	},
	"ScanInit": func(ctx context.Context, c *Comm) error {
		_, err := ScanInit(c, []int32{1}, []int32{0}, Sum)
		return err
	},
	"ExscanInit": func(ctx context.Context, c *Comm) error {
		_, err := ExscanInit(c, []int32{1}, []int32{0}, Sum)
		return err
	},
	"ScatterInit": func(ctx context.Context, c *Comm) error {
		_, err := ScatterInit(c, []int32{1, 2}, []int32{0}, 0)
		return err
	},
	"GatherInit": func(ctx context.Context, c *Comm) error {
		_, err := GatherInit(c, []int32{1}, []int32{0, 0}, 0)
		return err
	},
	"AllgatherInit": func(ctx context.Context, c *Comm) error {
		_, err := AllgatherInit(c, []int32{1}, []int32{0, 0})
		return err
	},
	"AlltoallInit": func(ctx context.Context, c *Comm) error {
		_, err := AlltoallInit(c, []int32{1, 2}, []int32{0, 0})
		return err
	},
	"ScattervInit": func(ctx context.Context, c *Comm) error {
		_, err := ScattervInit(c, []int32{1, 2}, []int{1, 1}, []int{0, 1}, []int32{0}, 0)
		return err
	},
	"GathervInit": func(ctx context.Context, c *Comm) error {
		_, err := GathervInit(c, []int32{1}, []int32{0, 0}, []int{1, 1}, []int{0, 1}, 0)
		return err
	},
	"AllgathervInit": func(ctx context.Context, c *Comm) error {
		_, err := AllgathervInit(c, []int32{1}, []int32{1, 2}, []int{1, 1}, []int{0, 1})
		return err
	},
	"AlltoallvInit": func(ctx context.Context, c *Comm) error {
		_, err := AlltoallvInit(c, []int32{1, 2}, []int{1, 1}, []int{0, 1}, []int32{0, 0}, []int{1, 1}, []int{0, 1})
		return err
	},
}

// TestCommFuncsListed parses the package: every exported function with a
// *Comm parameter must be in commFuncs, so that a new one cannot escape
// TestNilAndClosedComm.
func TestCommFuncsListed(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, f := range pkgs["commtune"].Files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() {
				continue
			}
			for _, p := range fn.Type.Params.List {
				if star, ok := p.Type.(*ast.StarExpr); ok {
					if id, ok := star.X.(*ast.Ident); ok && id.Name == "Comm" {
						found = append(found, fn.Name.Name)
						break
					}
				}
			}
		}
	}
	if len(found) < 20 {
		t.Fatalf("found only %v: is the parse wrong?", found)
	}
	for _, name := range found {
		if commFuncs[name] == nil {
			t.Errorf("exported function %s takes a *Comm but is not in commFuncs", name)
		}
	}
	for name := range commFuncs {
		if !slices.Contains(found, name) {
			t.Errorf("commFuncs lists %s, which is not an exported function taking a *Comm", name)
		}
	}
}

// TestNilAndClosedComm calls every method of *Comm (by reflection) and
// every function taking a *Comm on a nil communicator, on a closed world
// communicator, and on a communicator derived from a world since closed:
// each returns an error (ErrClosed when closed), within a second, and
// none panics.
func TestNilAndClosedComm(t *testing.T) {
	var states []struct {
		name string
		c    *Comm
		want error // nil: any error
	}
	states = append(states, struct {
		name string
		c    *Comm
		want error
	}{"nil", nil, nil})
	var world, derived *Comm
	err := Local(1, func(c *Comm) error {
		world = c
		var err error
		derived, err = c.Dup()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Local closed world on return: both are closed now.
	states = append(states,
		struct {
			name string
			c    *Comm
			want error
		}{"closed world", world, ErrClosed},
		struct {
			name string
			c    *Comm
			want error
		}{"derived from a closed world", derived, ErrClosed})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	typ := reflect.TypeFor[*Comm]()
	var methods []reflect.Method
	for i := 0; i < typ.NumMethod(); i++ {
		methods = append(methods, typ.Method(i))
	}
	// Close last: it closes the derived communicator itself, which would
	// hide whether the others see that its world is closed.
	slices.SortStableFunc(methods, func(a, b reflect.Method) int {
		return cmp.Compare(b2i(a.Name == "Close"), b2i(b.Name == "Close"))
	})
	for _, st := range states {
		for _, m := range methods {
			if slices.Contains(exitMethods, m.Name) {
				continue
			}
			t.Run(st.name+"/"+m.Name, func(t *testing.T) {
				args := []reflect.Value{reflect.ValueOf(st.c)}
				for j := 1; j < m.Type.NumIn(); j++ {
					in := m.Type.In(j)
					if m.Type.IsVariadic() && j == m.Type.NumIn()-1 {
						break
					}
					if in == reflect.TypeFor[context.Context]() {
						args = append(args, reflect.ValueOf(context.Context(ctx)))
					} else {
						args = append(args, reflect.Zero(in))
					}
				}
				start := time.Now()
				var out []reflect.Value
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Fatalf("%s on a %s communicator panicked: %v", m.Name, st.name, p)
						}
					}()
					out = m.Func.Call(args)
				}()
				if d := time.Since(start); d > time.Second {
					t.Errorf("%s took %v", m.Name, d)
				}
				if slices.Contains(infoMethods, m.Name) {
					checkInfo(t, m.Name, st.c, out)
					return
				}
				last := out[len(out)-1]
				if last.Type() != reflect.TypeFor[error]() {
					t.Fatalf("%s returns no error: add it to infoMethods with its neutral value", m.Name)
				}
				checkErr(t, m.Name, st.name, last.Interface(), st.want)
			})
		}
		for name, call := range commFuncs {
			t.Run(st.name+"/"+name, func(t *testing.T) {
				start := time.Now()
				var err error
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Fatalf("%s on a %s communicator panicked: %v", name, st.name, p)
						}
					}()
					err = call(ctx, st.c)
				}()
				if d := time.Since(start); d > time.Second {
					t.Errorf("%s took %v", name, d)
				}
				checkErr(t, name, st.name, err, st.want)
			})
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func checkErr(t *testing.T, name, state string, got any, want error) {
	t.Helper()
	err, _ := got.(error)
	if err == nil || want != nil && !errors.Is(err, want) {
		t.Errorf("%s on a %s communicator returned %v, want an error (%v)", name, state, err, want)
	}
}

// checkInfo checks the neutral values of the methods without an error.
func checkInfo(t *testing.T, name string, c *Comm, out []reflect.Value) {
	t.Helper()
	if c != nil {
		return // a closed communicator still knows its rank and size
	}
	want := map[string]any{"Close": error(nil), "Group": (*Group)(nil), "Profile": Profile{}, "Rank": -1, "Revoked": false, "Size": 0, "Stats": Stats{}, "Transport": "", "WorldRank": -1}[name]
	if got := out[0].Interface(); !reflect.DeepEqual(got, want) {
		t.Errorf("%s on a nil communicator = %v, want %v", name, got, want)
	}
}
