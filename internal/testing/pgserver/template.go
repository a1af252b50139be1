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
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
)

// A fresh database cluster: initdb once per machine and server version,
// then a copy for each server. initdb takes a second or more on a 2-core
// runner and a copy of its 40 MB a twentieth of that, which is most of a
// server's start in the PostgreSQL suites.

// initdbArgs are initdb's arguments after the folder: what every server's
// cluster is made with, and part of the cached cluster's name.
var initdbArgs = []string{"-A", "trust", "-U", superuser, "--no-sync", "-E", "UTF8", "--locale=C"}

// superuser is the database user initdb makes, whom every DSN names.
const superuser = "postgres"

// newCluster puts a fresh database cluster in s.data: a copy of the cached
// one when there is one, else initdb's, which is then cached for the next
// server. The cache only saves time: when it cannot be read or written,
// each server runs initdb.
func (s *Server) newCluster() error {
	cached := cachedClusterDir(s.bin)
	if cached != "" {
		if _, err := os.Stat(filepath.Join(cached, "PG_VERSION")); err == nil {
			if err := copyTree(cached, s.data, s.owner); err == nil {
				return nil
			}
			// A cache being deleted as it is read: initdb after all.
			if err := os.RemoveAll(s.data); err != nil {
				return err
			}
		}
	}
	if err := s.initdb(); err != nil {
		return err
	}
	if cached != "" {
		keep(s.data, cached)
	}
	return nil
}

// initdb creates the database cluster in s.data.
func (s *Server) initdb() error {
	out := filepath.Join(s.dir, "initdb.log")
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := s.command("initdb", append([]string{"-D", s.data}, initdbArgs...)...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("initdb failed (%v); last lines of %s:\n%s", err, out, childproc.Tail(out, 20))
	}
	return nil
}

// cachedClusterDir is where the cluster initdb made with the binaries of
// bin is cached: under the user's cache folder (as Go's build cache), in a
// folder named by the binaries (path, size and time, so that an upgraded
// package makes a new one) and initdbArgs. It is "" when there is no cache
// folder.
func cachedClusterDir(bin string) string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	h := sha256.New()
	fmt.Fprintln(h, bin, initdbArgs)
	for _, name := range serverBinaries {
		fi, err := os.Stat(filepath.Join(bin, name))
		if err != nil {
			return ""
		}
		fmt.Fprintln(h, name, fi.Size(), fi.ModTime().UnixNano())
	}
	return filepath.Join(base, "paymentjob-operator", "pgserver", hex.EncodeToString(h.Sum(nil))[:16])
}

// keep copies the fresh cluster in data to the cache folder dir, under
// another name first and renamed when whole, so that a process reading the
// cache never sees half a cluster and two processes filling it at once
// leave one. It is best effort: a cache not written only costs time.
func keep(data, dir string) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".incomplete-")
	if err != nil {
		return
	}
	whole := filepath.Join(tmp, "data")
	if copyTree(data, whole, nil) != nil || os.Rename(whole, dir) != nil {
		// Another process cached its copy first, or the copy failed.
		_ = os.RemoveAll(tmp)
		return
	}
	_ = os.Remove(tmp)
}

// copyTree copies the folder src to dst, which must not exist, keeping
// permissions, and gives what it writes to owner (nil: this process's
// user). A database cluster holds only folders and regular files.
func copyTree(src, dst string, owner *syscall.Credential) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			err = os.Mkdir(target, info.Mode().Perm())
			if err == nil {
				// Mkdir's mode passes the umask; PostgreSQL checks the
				// folder's mode.
				err = os.Chmod(target, info.Mode().Perm())
			}
		case info.Mode().IsRegular():
			err = copyFile(path, target, info.Mode().Perm())
		default:
			return fmt.Errorf("%s: neither a folder nor a regular file", path)
		}
		if err != nil || owner == nil {
			return err
		}
		return os.Chown(target, int(owner.Uid), int(owner.Gid))
	})
}

// copyFile copies the regular file src to the new file dst with mode perm.
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, perm)
}
