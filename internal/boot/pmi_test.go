package boot

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/auth"
	"github.com/commtune/commtune/internal/fuzzseed"
)

func lookupMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestPMIJob runs whole jobs against the fake server: every protocol
// version in both dialects, one and four ranks. Each rank must learn its
// rank, node and local rank from the mapping, the same secret as the
// others, and exchange values (one longer than the server's limit, with
// spaces, '=' and ';') across a fence that is a real barrier.
func TestPMIJob(t *testing.T) {
	for _, tc := range []struct {
		dialect, version string
		wantVersion      int
	}{
		{"hydra", "", 1}, {"hydra", "1", 1}, {"hydra", "2", 2}, {"slurm", "", 2}, {"slurm", "2", 2},
	} {
		for _, size := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/pmi%s/n=%d", tc.dialect, tc.version, size), func(t *testing.T) {
				f := newFakePMI(t, tc.dialect, size)
				f.valMax = 64 // splits the long value
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				jobs := make([]*Job, size)
				errs := make([]error, size)
				var wg sync.WaitGroup
				long := strings.Repeat("a b=c;d%", 40)
				var arrived sync.WaitGroup
				arrived.Add(size)
				for r := 0; r < size; r++ {
					env := f.env(r, tc.version)
					wg.Add(1)
					go func(r int) {
						defer wg.Done()
						j, err := discover(ctx, lookupMap(env))
						if err != nil {
							errs[r] = err
							arrived.Done()
							return
						}
						jobs[r] = j
						if r == size-1 {
							time.Sleep(50 * time.Millisecond) // the fence must wait for it
						}
						if err := j.KV.Put(ctx, fmt.Sprintf("v/%d", r), fmt.Sprint(long, r)); err != nil {
							errs[r] = err
						}
						arrived.Done()
						if err := j.KV.Fence(ctx); err != nil {
							errs[r] = err
							return
						}
						for p := 0; p < size; p++ {
							v, err := j.KV.Get(ctx, fmt.Sprintf("v/%d", p))
							if err != nil || v != fmt.Sprint(long, p) {
								errs[r] = fmt.Errorf("rank %d got %q (%v) for rank %d", r, clip(v), err, p)
								return
							}
						}
						if _, err := j.KV.Get(ctx, "never-put"); err == nil || !errors.Is(err, ErrPMI) {
							errs[r] = fmt.Errorf("missing key: %v", err)
						}
					}(r)
				}
				wg.Wait()
				for r, err := range errs {
					if err != nil {
						t.Fatalf("rank %d: %v", r, err)
					}
				}
				for r, j := range jobs {
					c := j.KV.(*pmiClient)
					if j.Rank != r || j.Size != size || j.Source != SourcePMI || c.version != tc.wantVersion {
						t.Fatalf("rank %d: job %+v, version %d", r, j, c.version)
					}
					if !bytes.Equal(j.Secret, jobs[0].Secret) || len(j.Secret) != 32 || j.ID != "kvs_fake_0" {
						t.Fatalf("rank %d: secret %x id %q, rank 0's %x", r, j.Secret, j.ID, jobs[0].Secret)
					}
					wantNode, wantLocal := "pmi-node-0", r
					if size == 4 && r >= 2 {
						wantNode, wantLocal = "pmi-node-1", r-2
					}
					if size > 1 && (j.Node != wantNode || j.LocalRank != wantLocal || j.LocalSize != 2) {
						t.Fatalf("rank %d: node %q local %d of %d", r, j.Node, j.LocalRank, j.LocalSize)
					}
					if err := j.Close(); err != nil {
						t.Fatalf("rank %d: close: %v", r, err)
					}
				}
				f.mu.Lock()
				defer f.mu.Unlock()
				for _, c := range f.commits {
					if c == "commit" {
						t.Fatalf("sent a wire commit command, which kills a Hydra job")
					}
				}
			})
		}
	}
}

// TestPMIMalformed: every bad or missing reply is a clear error, soon.
func TestPMIMalformed(t *testing.T) {
	tests := []struct {
		name, version, cmd, reply string
		want                      string
	}{
		{"garbage line", "1", "init", "hello\n", "is not key=value"},
		{"no cmd", "1", "init", "rc=0\n", "no cmd="},
		{"wrong reply", "1", "get_maxes", "cmd=barrier_out\n", "answered cmd=barrier_out, want maxes"},
		{"init refused", "1", "init", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 msg=nope\n", "rc=-1 nope"},
		{"wrong version", "1", "init", "cmd=response_to_init pmi_version=9 rc=0\n", `answers version "9"`},
		{"duplicate key", "1", "get_my_kvsname", "cmd=my_kvsname kvsname=a kvsname=b\n", "twice"},
		{"server closes", "1", "get_maxes", "close", "closed the connection"},
		{"server hangs", "1", "barrier_in", "hang", "waiting for a reply"},
		{"bad length", "2", "fullinit", "abcdefcmd=x;", "bad PMI-2 length header"},
		{"huge length", "2", "fullinit", "999999cmd=x;", "bad PMI-2 length header"},
		{"truncated", "2", "fullinit", "    40cmd=fullinit-response;", "waiting for a reply"},
		{"fullinit rank", "2", "fullinit", string(formatPMI2("fullinit-response", "rank", "3", "size", "9", "rc", "0")), "fullinit says rank 3 of 9"},
		{"bad mapping", "2", "info-getjobattr", string(formatPMI2("info-getjobattr-response", "found", "TRUE", "value", "(vector,(0,x,1))", "rc", "0")), "PMI_process_mapping"},
		{"kvs-put refused", "2", "kvs-put", string(formatPMI2("kvs-put-response", "rc", "7", "errmsg", "full")), "rc=7 full"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakePMI(t, "hydra", 1)
			f.misbehave[tc.cmd] = tc.reply
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := discover(ctx, lookupMap(f.env(0, tc.version)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
}

func TestPMIEnvironment(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string // error, or "" for the source expected
		src  string
	}{
		{"singleton", map[string]string{}, "", SourceSingleton},
		{"slurm without pmi", map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "4"}, "run srun --mpi=pmix or --mpi=pmi2", ""},
		{"slurm one task", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, "", SourceSingleton},
		{"bad version", map[string]string{EnvPMIFD: "99", EnvPMIVersion: "3"}, `COMMTUNE_PMI="3": want 1, 2 or auto`, ""},
		{"pmi2 on port", map[string]string{EnvPMIPort: "127.0.0.1:1", EnvPMIID: "0", EnvPMIVersion: "2"}, `COMMTUNE_PMI="2" with PMI_PORT="127.0.0.1:1": want PMI_FD`, ""},
		{"bad version without pmi", map[string]string{EnvPMIVersion: "two"}, `COMMTUNE_PMI="two": want 1, 2 or auto`, ""},
		{"version auto in capitals", map[string]string{EnvPMIVersion: "AUTO"}, "", SourceSingleton},
		{"port without id", map[string]string{EnvPMIPort: "127.0.0.1:1"}, "PMI_ID is not", ""},
		{"bad fd", map[string]string{EnvPMIFD: "x"}, `PMI_FD="x" is not a file descriptor`, ""},
	}
	// A pipe's descriptor, duplicated: the client takes it over (and closes
	// it), so the *os.File keeps its own.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	pipeFD := dupFD(t, pr)
	tests = append(tests, struct {
		name string
		env  map[string]string
		want string
		src  string
	}{"fd not a socket", map[string]string{EnvPMIFD: fmt.Sprint(pipeFD)}, "is not a socket", ""})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			j, err := discover(ctx, lookupMap(tc.env))
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil || j.Source != tc.src {
				t.Fatalf("job %+v, %v; want source %s", j, err, tc.src)
			}
		})
	}
}

func TestProcessMapping(t *testing.T) {
	tests := []struct {
		in   string
		size int
		want string // node per rank, or the error
	}{
		{"(vector,(0,1,4))", 4, "[0 0 0 0]"},
		{"(vector,(0,2,2))", 4, "[0 0 1 1]"},
		{"(vector,(0,2,1))", 5, "[0 1 0 1 0]"},
		{"(vector,(0,2,2),(2,1,1))", 6, "[0 0 1 1 2 0]"},
		{"(vector, (1,3,1))", 3, "[1 2 3]"},
		{"(vector,(0,2,3))", 4, "[0 0 0 1]"},
		{"(vector,(0,0,0))", 2, "places no rank"},
		{"(vector,(0,1))", 2, "not 3 numbers"},
		{"(vector,(0,1,-1))", 2, "is not a count"},
		{"(vector,(0,1,1)", 2, "not closed"},
		{"hello", 2, "want (vector"},
		{"(vector,0,1,1)", 2, "does not start with ("},
	}
	for _, tc := range tests {
		nodes, err := parseProcessMapping(tc.in, tc.size)
		got := fmt.Sprint(nodes)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("parseProcessMapping(%q, %d) = %s, want %s", tc.in, tc.size, got, tc.want)
		}
	}
}

func TestValueEscaping(t *testing.T) {
	for _, v := range []string{"", "plain", "a b=c;d%e#f\n", "\x00\xff", strings.Repeat("x", 5000)} {
		got, err := unescapeValue(escapeValue(v))
		if err != nil || got != v {
			t.Fatalf("%q → %q → %q, %v", v, escapeValue(v), got, err)
		}
		if e := escapeValue(v); strings.ContainsAny(e, " =;\n") {
			t.Fatalf("escaped %q still has a separator: %q", v, e)
		}
	}
	for _, bad := range []string{"%", "%4", "%zz"} {
		if _, err := unescapeValue(bad); err == nil {
			t.Fatalf("unescapeValue(%q) accepted", bad)
		}
	}
}

// FuzzPMIReply feeds arbitrary bytes to both wire readers: they must never
// panic nor allocate past maxPMIMessage, and what they accept has a cmd.
// The seed corpus is testdata/fuzz/FuzzPMIReply (see TestPMIFuzzSeeds).
func FuzzPMIReply(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, framed bool) {
		r := bytes.NewReader(data)
		for r.Len() > 0 {
			var fields pmiFields
			var err error
			if framed {
				fields, err = readPMI2(r)
			} else {
				fields, err = readPMI1(bufioReader(r))
			}
			if err != nil {
				return
			}
			if fields.cmd() == "" {
				t.Fatalf("accepted %q without cmd", data)
			}
			if framed {
				// What PMI-2 accepts re-encodes to a message it accepts alike.
				var kv []string
				for k, v := range fields {
					if k != "cmd" {
						kv = append(kv, k, v)
					}
				}
				again, err := readPMI2(bytes.NewReader(formatPMI2(fields.cmd(), kv...)))
				if err != nil || len(again) != len(fields) {
					t.Fatalf("%v re-read as %v, %v", fields, again, err)
				}
			}
		}
	})
}

// TestPMIFuzzSeeds keeps testdata/fuzz/FuzzPMIReply in step with replies
// real servers send (go test -run PMIFuzzSeeds -rewrite-seeds).
func TestPMIFuzzSeeds(t *testing.T) {
	var seeds []fuzzseed.Seed
	add := func(name string, data string, framed bool) {
		seeds = append(seeds, fuzzseed.Seed{Name: name, Values: []any{[]byte(data), framed}})
	}
	add("hydra-init", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n", false)
	add("hydra-maxes", "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n", false)
	add("hydra-get-missing", "cmd=get_result rc=-1 msg=key_missing_not_found value=unknown\n", false)
	add("hydra-initack", "cmd=initack\ncmd=set size=1\ncmd=set rank=0\ncmd=set debug=0\n", false)
	add("hydra-fullinit", "   113cmd=fullinit-response;pmi-version=2;pmi-subversion=0;rank=0;size=1;appnum=0;debugged=FALSE;pmiverbose=FALSE;rc=0;", true)
	add("hydra-get", "    49cmd=kvs-get-response;found=TRUE;value=hello;rc=0;", true)
	add("slurm-get-missing", "38    cmd=kvs-get-response;rc=1;found=FALSE;", true)
	add("escaped-semicolon", "30    cmd=kvs-get-response;value=a;;b;", true)
	add("bad-length", "99999999", true)
	add("long-line", strings.Repeat("x", 70000)+"\n", false)
	fuzzseed.Sync(t, "FuzzPMIReply", seeds)
}

func bufioReader(r *bytes.Reader) *bufio.Reader { return bufio.NewReaderSize(r, 4096) }

// TestPMISecretPerJob: two jobs under the same kind of launcher, even with
// the same key-value space name, get different secrets, so a process of
// one cannot pass the other's TCP handshake (internal/driver/tcp's
// TestWrongSecretMesh and TestHandshakeRejections show that a connection
// without the job secret is refused).
func TestPMISecretPerJob(t *testing.T) {
	secret := func() []byte {
		f := newFakePMI(t, "hydra", 1)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		j, err := discover(ctx, lookupMap(f.env(0, "")))
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		if j.ID != "kvs_fake_0" {
			t.Fatalf("job id %q", j.ID)
		}
		return j.Secret
	}
	a, b := secret(), secret()
	if bytes.Equal(a, b) {
		t.Fatalf("two jobs share the secret %x", a)
	}
	if err := auth.Verify(a, "probe", make([]byte, auth.ChallengeSize), auth.Proof(b, "probe", make([]byte, auth.ChallengeSize))); !errors.Is(err, auth.ErrDenied) {
		t.Fatalf("one job's proof verified with the other's secret: %v", err)
	}
}

func TestPMIRankSize(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{EnvPMISize: "4", EnvPMIRank: "3"}, "rank 3 of 4"},
		{map[string]string{EnvPMIRank: "0"}, "PMI_SIZE is not set (the PMI launcher sets it with PMI_FD)"},
		{map[string]string{EnvPMISize: "4", EnvPMIRank: "4"}, `PMI_RANK="4" with PMI_SIZE="4": want PMI_RANK from 0 to 3`},
		{map[string]string{EnvPMISize: "x", EnvPMIRank: "0"}, `PMI_SIZE="x": want a decimal whole number from 1`},
	}
	for _, tc := range tests {
		r, s, err := rankSize(lookupMap(tc.env))
		got := fmt.Sprintf("rank %d of %d", r, s)
		if err != nil {
			got = err.Error()
			if !errors.Is(err, ErrPMI) || errors.Is(err, ErrEnv) {
				t.Errorf("%v: wraps the wrong sentinel", err)
			}
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("rankSize(%v) = %s, want %s", tc.env, got, tc.want)
		}
	}
}
