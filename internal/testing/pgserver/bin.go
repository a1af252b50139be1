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
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Finding the server's binaries and the user it runs as.

// serverBinaries are the binaries Start runs.
var serverBinaries = []string{"initdb", "postgres"}

// osUser is the OS user the server runs as when the test runs as root.
const osUser = "postgres"

// findBin returns the folder of initdb and postgres: $PG_BIN, else the
// highest version under /usr/lib/postgresql, else the one on PATH.
func findBin() (string, error) {
	if dir := os.Getenv("PG_BIN"); dir != "" {
		if err := hasServer(dir); err != nil {
			return "", fmt.Errorf("PG_BIN=%s: %w", dir, err)
		}
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sortByVersion(dirs)
	for _, dir := range dirs {
		if hasServer(dir) == nil {
			return dir, nil
		}
	}
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		return "", errors.New("no PG_BIN, no /usr/lib/postgresql/*/bin, and no initdb on PATH")
	}
	dir := filepath.Dir(initdb)
	if err := hasServer(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// hasServer checks that dir holds the two binaries Start runs.
func hasServer(dir string) error {
	for _, name := range serverBinaries {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("no %s in %s", name, dir)
		}
	}
	return nil
}

// sortByVersion sorts /usr/lib/postgresql/<version>/bin folders, the
// highest version first (15 before 9.6).
func sortByVersion(dirs []string) {
	slices.SortFunc(dirs, func(a, b string) int { return slices.Compare(versionOf(b), versionOf(a)) })
}

// versionOf reads the version of /usr/lib/postgresql/<version>/bin.
func versionOf(binDir string) []int {
	var v []int
	for _, part := range strings.Split(filepath.Base(filepath.Dir(binDir)), ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil
		}
		v = append(v, n)
	}
	return v
}

// serverOwner is the user the server runs as: postgres when this process is
// root (PostgreSQL refuses root), else nobody in particular (nil: this
// process's user).
func serverOwner() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(osUser)
	if err != nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL refuses root: no user postgres to run it as "+
			"(Debian's package %s creates it): %w", debianPackage, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
