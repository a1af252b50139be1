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

// Command etcdutl is etcd's etcdutl (snapshot restore and status, defrag,
// hashkv, version), built from its Go module at the version of the test
// control plane's etcd. The restore tests of test/e2e run it.
package main

import (
	"os"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/etcdutl/v3/etcdutl"
)

func main() {
	root := &cobra.Command{Use: "etcdutl", Short: "An administrative command line tool for etcd3.", SilenceUsage: true}
	root.PersistentFlags().StringVarP(&etcdutl.OutputFormat, "write-out", "w", "simple",
		"set the output format (fields, json, protobuf, simple, table)")
	root.AddCommand(
		etcdutl.NewSnapshotCommand(),
		etcdutl.NewDefragCommand(),
		etcdutl.NewHashKVCommand(),
		etcdutl.NewVersionCommand(),
	)
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
