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

package pgserver

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The server's processes, read from /proc: what Kill and Stop wait for.

// waitGone waits until none of pids is a live process. Zombies do not
// count: they hold no memory or port, and reaping the orphans of a killed
// postmaster is the init process's business.
func waitGone(pids []int, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		left := alive(pids)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("PostgreSQL processes %v still run %s after the postmaster ended", left, bound)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// alive returns the processes of pids that exist and are not zombies.
func alive(pids []int) []int {
	var left []int
	for _, pid := range pids {
		if st := state(pid); st != "" && st != "Z" && st != "X" {
			left = append(left, pid)
		}
	}
	return left
}

// children lists the live processes whose parent is pid, from /proc.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if fields := procStat(child); len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			pids = append(pids, child)
		}
	}
	return alive(pids)
}

// state is a process's state letter (R, S, T, Z, ...), "" when it does not
// exist.
func state(pid int) string {
	if fields := procStat(pid); len(fields) > 0 {
		return fields[0]
	}
	return ""
}

// procStat returns the fields of /proc/<pid>/stat after the command name:
// state, parent, process group, ...; nil when the process does not exist.
func procStat(pid int) []string {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	// "pid (comm) state ppid pgrp ...": comm may hold spaces and
	// parentheses, the fields after its last ')' do not.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}
