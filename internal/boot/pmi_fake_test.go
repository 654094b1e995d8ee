package boot

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
)

// fakePMI is an in-process PMI server for tests. It speaks PMI-1 and
// PMI-2 in two dialects: "hydra" (PMI-2 fence answered at once, gets held
// until every rank has fenced, rc last, a missing key rc=-1 or
// found=FALSE) and "slurm" (PMI-2 only, pmijobid= required in fullinit,
// rc first, a real fence, a missing key rc=1). misbehave, when set,
// replaces the reply to the named command (or to every command, "*").
type fakePMI struct {
	t         *testing.T
	dialect   string
	size      int
	mapping   string
	valMax    int
	misbehave map[string]string

	mu      sync.Mutex
	cond    *sync.Cond
	kvs     map[string]string
	fenced  map[int]int // epoch → ranks fenced
	epoch   []int       // per rank
	commits []string    // every PMI-1 command name received
}

func newFakePMI(t *testing.T, dialect string, size int) *fakePMI {
	f := &fakePMI{t: t, dialect: dialect, size: size, valMax: 1024, kvs: map[string]string{},
		fenced: map[int]int{}, epoch: make([]int, size), misbehave: map[string]string{}}
	f.cond = sync.NewCond(&f.mu)
	if size > 1 {
		f.mapping = fmt.Sprintf("(vector,(0,%d,%d))", 2, (size+1)/2)
	}
	return f
}

// env starts serving rank r on a socket pair and returns the variables a
// launcher would set. The client's end is a descriptor of this process.
func (f *fakePMI) env(r int, version string) map[string]string {
	fd, srv := socketPair(f.t)
	go f.serve(r, srv)
	env := map[string]string{EnvPMIFD: strconv.Itoa(fd), EnvPMIRank: strconv.Itoa(r), EnvPMISize: strconv.Itoa(f.size)}
	if f.dialect == "slurm" {
		env[EnvPMIJobID] = "4242.0"
		env["SLURM_PROCID"] = strconv.Itoa(r)
		env["SLURM_NTASKS"] = strconv.Itoa(f.size)
	}
	if version != "" {
		env[EnvPMIVersion] = version
	}
	return env
}

func (f *fakePMI) serve(rank int, c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	framed := false
	for {
		var fields pmiFields
		var err error
		if framed {
			fields, err = readPMI2(r)
		} else {
			fields, err = readPMI1(r)
		}
		if err != nil {
			return
		}
		cmd := fields.cmd()
		f.mu.Lock()
		f.commits = append(f.commits, cmd)
		bad, misbehaving := f.misbehave[cmd]
		if !misbehaving {
			bad, misbehaving = f.misbehave["*"]
		}
		f.mu.Unlock()
		if misbehaving {
			switch bad {
			case "hang":
				select {} // never answers
			case "close":
				return
			}
			c.Write([]byte(bad))
			continue
		}
		reply := f.reply(rank, cmd, fields, framed)
		var out []byte
		if framed {
			out = formatPMI2(reply[0], reply[1:]...)
		} else {
			line := "cmd=" + reply[0]
			for i := 1; i+1 < len(reply); i += 2 {
				line += " " + reply[i] + "=" + reply[i+1]
			}
			out = []byte(line + "\n")
		}
		if cmd == "init" && fields["pmi_version"] == "2" {
			framed = true
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// reply computes the answer to one request as cmd, key, value, …
func (f *fakePMI) reply(rank int, cmd string, in pmiFields, framed bool) []string {
	slurm := f.dialect == "slurm"
	rc := func(kv ...string) []string { // Slurm puts rc first, Hydra last
		if slurm {
			return append([]string{kv[0], "rc", "0"}, kv[1:]...)
		}
		return append(kv, "rc", "0")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch cmd {
	case "init":
		v := in["pmi_version"]
		if slurm && v != "2" {
			return []string{"response_to_init", "pmi_version", "2", "pmi_subversion", "0", "rc", "-1"}
		}
		return []string{"response_to_init", "pmi_version", v, "pmi_subversion", in["pmi_subversion"], "rc", "0"}
	case "get_maxes":
		return []string{"maxes", "kvsname_max", "256", "keylen_max", "64", "vallen_max", strconv.Itoa(f.valMax)}
	case "get_my_kvsname":
		return []string{"my_kvsname", "kvsname", "kvs_fake_0"}
	case "put":
		f.kvs[in["key"]] = in["value"]
		return []string{"put_result", "rc", "0", "msg", "success"}
	case "barrier_in":
		f.fence(rank)
		f.waitAll(f.epoch[rank])
		return []string{"barrier_out"}
	case "get":
		if in["key"] == "PMI_process_mapping" && f.mapping != "" {
			return []string{"get_result", "rc", "0", "msg", "success", "value", f.mapping}
		}
		v, ok := f.kvs[in["key"]]
		if !ok {
			return []string{"get_result", "rc", "-1", "msg", "key_" + in["key"] + "_not_found", "value", "unknown"}
		}
		return []string{"get_result", "rc", "0", "msg", "success", "value", v}
	case "finalize":
		if framed {
			return rc("finalize-response")
		}
		return []string{"finalize_ack"}
	case "fullinit":
		if slurm && in["pmijobid"] == "" {
			return []string{"fullinit-response", "rc", "-1", "errmsg", "no pmijobid"}
		}
		return rc("fullinit-response", "pmi-version", "2", "pmi-subversion", "0", "rank", in["pmirank"],
			"size", strconv.Itoa(f.size), "appnum", "0", "debugged", "FALSE", "pmiverbose", "FALSE")
	case "job-getid":
		return rc("job-getid-response", "jobid", "kvs_fake_0")
	case "info-getjobattr":
		if in["key"] == "PMI_process_mapping" && f.mapping != "" {
			return rc("info-getjobattr-response", "found", "TRUE", "value", f.mapping)
		}
		return rc("info-getjobattr-response", "found", "FALSE")
	case "kvs-put":
		f.kvs[in["key"]] = in["value"]
		return rc("kvs-put-response")
	case "kvs-fence":
		f.fence(rank)
		if slurm {
			f.waitAll(f.epoch[rank])
		}
		return rc("kvs-fence-response")
	case "kvs-get":
		if !slurm {
			f.waitAll(f.epoch[rank]) // Hydra holds a get until every rank has fenced
		}
		v, ok := f.kvs[in["key"]]
		if !ok {
			if slurm {
				return []string{"kvs-get-response", "rc", "1", "found", "FALSE"}
			}
			return rc("kvs-get-response", "found", "FALSE")
		}
		return rc("kvs-get-response", "found", "TRUE", "value", v)
	}
	return []string{"unknown-" + cmd, "rc", "-1"}
}

func (f *fakePMI) fence(rank int) {
	f.epoch[rank]++
	f.fenced[f.epoch[rank]]++
	f.cond.Broadcast()
}

func (f *fakePMI) waitAll(epoch int) {
	for f.fenced[epoch] < f.size {
		f.cond.Wait()
	}
}
