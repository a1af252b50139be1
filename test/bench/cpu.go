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
	"os"
	"path/filepath"
	"strconv"
)

// cpuNow returns the CPU seconds used so far by the benchmark ("bench")
// and by each of its children, by command name (kube-apiserver, etcd,
// manager, sandbox). It shows where the machine's cores went in a window.
func cpuNow() cpuUsage {
	u := cpuUsage{}
	self := os.Getpid()
	if data, err := os.ReadFile("/proc/self/stat"); err == nil {
		if st, err := parseProcStat(string(data)); err == nil {
			u["bench"] = st.cpu
		}
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		if pid, err := strconv.Atoi(filepath.Base(dir)); err != nil || pid == self {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		st, err := parseProcStat(string(data))
		if err != nil || st.ppid != self {
			continue
		}
		u[st.comm] += st.cpu
	}
	return u
}
