/*
Copyright 2026 The paymentjob-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// cpuNow returns the CPU seconds used so far by the benchmark ("bench")
// and by each of its children, by command name (kube-apiserver, etcd,
// manager, sandbox, postgres). It shows where the machine's cores went in a
// window.
func cpuNow() cpuUsage {
	self := os.Getpid()
	procs := map[int]procStat{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		if st, err := parseProcStat(string(data)); err == nil {
			procs[pid] = st
		}
	}
	return attributeCPU(self, procs)
}

// attributeCPU adds up the CPU seconds of procs by the benchmark (self, as
// "bench") and by each of its children, by command name. A child's own
// children count as the child: PostgreSQL's postmaster forks a backend per
// connection, whose CPU is the server's, while it runs (its own times) and
// once the postmaster has waited for it (the postmaster's children times).
// The benchmark's children times are left out: they are the processes it
// started and has already counted.
func attributeCPU(self int, procs map[int]procStat) cpuUsage {
	u := cpuUsage{}
	if st, ok := procs[self]; ok {
		u["bench"] = st.cpu
	}
	for pid, st := range procs {
		if pid == self {
			continue
		}
		if child, ok := childOf(self, pid, procs); ok {
			u[procs[child].comm] += st.cpu + st.waitedCPU
		}
	}
	return u
}

// maxProcessDepth bounds the walk from a process up to the benchmark.
const maxProcessDepth = 16

// childOf returns the child of self that pid descends from, or is.
func childOf(self, pid int, procs map[int]procStat) (int, bool) {
	for range maxProcessDepth {
		st, ok := procs[pid]
		switch {
		case !ok || pid == self:
			return 0, false
		case st.ppid == self:
			return pid, true
		}
		pid = st.ppid
	}
	return 0, false
}

// clockTicks is USER_HZ, the unit of the CPU times of /proc/<pid>/stat:
// 100 on every Linux architecture the benchmark runs on.
const clockTicks = 100

// procStat is the part of /proc/<pid>/stat the benchmark reads.
type procStat struct {
	comm string
	ppid int
	// cpu is user plus system time, in seconds; waitedCPU that of the
	// children it has waited for.
	cpu, waitedCPU float64
}

// parseProcStat parses the text of /proc/<pid>/stat. The command name is in
// parentheses and may hold spaces, so the fields are counted after the last
// closing parenthesis.
func parseProcStat(text string) (procStat, error) {
	open, end := strings.IndexByte(text, '('), strings.LastIndexByte(text, ')')
	if open < 0 || end < open {
		return procStat{}, errors.New("no command name in the process stat")
	}
	f := strings.Fields(text[end+1:])
	// After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16)
	// cstime(17).
	if len(f) < 15 {
		return procStat{}, errors.New("short process stat")
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, fmt.Errorf("invalid ppid %q", f[1])
	}
	var ticks [4]uint64
	for i := range ticks {
		if ticks[i], err = strconv.ParseUint(f[11+i], 10, 64); err != nil {
			return procStat{}, errors.New("invalid CPU times in the process stat")
		}
	}
	return procStat{
		comm: text[open+1 : end], ppid: ppid,
		cpu: float64(ticks[0]+ticks[1]) / clockTicks, waitedCPU: float64(ticks[2]+ticks[3]) / clockTicks,
	}, nil
}

// cpuUsage is CPU seconds by process name.
type cpuUsage map[string]float64

// plus adds the CPU seconds of two windows.
func (c cpuUsage) plus(o cpuUsage) cpuUsage { return addCounts(c, o) }

// minus returns the CPU seconds used since before.
func (c cpuUsage) minus(before cpuUsage) cpuUsage {
	d := cpuUsage{}
	for k, v := range c {
		d[k] = v - before[k]
	}
	return d
}

// perJob lists the CPU milliseconds per job of each process, the largest
// first.
func (c cpuUsage) perJob(n int) string {
	per := cpuUsage{}
	for k, v := range c {
		per[k] = v * 1000 / float64(n)
	}
	keys := make([]string, 0, len(per))
	for k := range per {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if per[keys[i]] != per[keys[j]] {
			return per[keys[i]] > per[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f ms", k, per[k]))
	}
	return strings.Join(parts, ", ")
}
