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

package sandbox

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"time"
)

// The Engine's lists are read from an ordered index of the objects of a
// kind by (Created, ID), so that one page costs O(log n + page) whatever
// the number of objects: the index keeps its keys sorted in blocks of at
// most 2*indexBlock keys, found by a binary search over the blocks' first
// keys and then within the block. An insert or a removal moves at most a
// block's keys and the list of blocks, which stays short (a million
// objects are about 4,000 blocks).

// indexBlock is half the most keys a block of a createdIndex holds.
const indexBlock = 256

// indexKey is the position of an object in a list: when it was created, in
// nanoseconds since the Unix epoch, and its ID, which makes the key unique.
type indexKey struct {
	created int64
	id      string
}

// keyOf is the index key of an object created at created with id.
func keyOf(created time.Time, id string) indexKey {
	return indexKey{created: created.UnixNano(), id: id}
}

// compare orders keys by created, then by ID.
func (k indexKey) compare(o indexKey) int {
	if c := cmp.Compare(k.created, o.created); c != 0 {
		return c
	}
	return strings.Compare(k.id, o.id)
}

// createdIndex is a set of index keys in ascending order. Its zero value is
// empty and ready to use; it is not safe for concurrent use (the Engine's
// lock guards it).
type createdIndex struct {
	// blocks are sorted and non-empty, and every key of a block is less
	// than every key of the next.
	blocks [][]indexKey
}

// block returns the block where k belongs: the last one whose first key is
// at most k, or the first one. There is at least one block.
func (x *createdIndex) block(k indexKey) int {
	b := sort.Search(len(x.blocks), func(i int) bool { return x.blocks[i][0].compare(k) > 0 })
	return max(b-1, 0)
}

// insert adds k; a key already there is left as it is.
func (x *createdIndex) insert(k indexKey) {
	if len(x.blocks) == 0 {
		x.blocks = [][]indexKey{{k}}
		return
	}
	b := x.block(k)
	blk := x.blocks[b]
	i, found := slices.BinarySearchFunc(blk, k, indexKey.compare)
	if found {
		return
	}
	blk = slices.Insert(blk, i, k)
	if len(blk) > 2*indexBlock {
		upper := slices.Clone(blk[indexBlock:])
		blk = slices.Clip(blk[:indexBlock])
		x.blocks = slices.Insert(x.blocks, b+1, upper)
	}
	x.blocks[b] = blk
}

// remove deletes k, if it is there.
func (x *createdIndex) remove(k indexKey) {
	if len(x.blocks) == 0 {
		return
	}
	b := x.block(k)
	i, found := slices.BinarySearchFunc(x.blocks[b], k, indexKey.compare)
	if !found {
		return
	}
	x.blocks[b] = slices.Delete(x.blocks[b], i, i+1)
	if len(x.blocks[b]) == 0 {
		x.blocks = slices.Delete(x.blocks, b, b+1)
	}
}

// descend calls fn with the keys less than k, greatest first, until fn
// returns false.
func (x *createdIndex) descend(k indexKey, fn func(indexKey) bool) {
	if len(x.blocks) == 0 {
		return
	}
	b := x.block(k)
	i, _ := slices.BinarySearchFunc(x.blocks[b], k, indexKey.compare)
	for i--; ; i = len(x.blocks[b]) - 1 {
		for ; i >= 0; i-- {
			if !fn(x.blocks[b][i]) {
				return
			}
		}
		if b--; b < 0 {
			return
		}
	}
}

// ascend calls fn with the keys greater than k, least first, until fn
// returns false.
func (x *createdIndex) ascend(k indexKey, fn func(indexKey) bool) {
	if len(x.blocks) == 0 {
		return
	}
	b := x.block(k)
	i, found := slices.BinarySearchFunc(x.blocks[b], k, indexKey.compare)
	if found {
		i++
	}
	for ; b < len(x.blocks); b, i = b+1, 0 {
		for ; i < len(x.blocks[b]); i++ {
			if !fn(x.blocks[b][i]) {
				return
			}
		}
	}
}
