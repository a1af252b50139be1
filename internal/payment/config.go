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

package payment

// What every adapter checks in its configuration before it sends anything:
// the URL it sends to and how often it reads a charge that is not final.

import (
	"errors"
	"fmt"
	"net/url"
	"time"
)

// DefaultPollInterval is the first wait between two reads of a charge that
// is not final yet, when an adapter's configuration names none.
const DefaultPollInterval = 500 * time.Millisecond

// DefaultMaxPollInterval is the longest wait between two reads of a charge,
// when an adapter's configuration names none.
const DefaultMaxPollInterval = 5 * time.Second

// PollIntervals validates the poll intervals of an adapter's configuration
// and returns them with their defaults: a zero poll is DefaultPollInterval,
// a zero maxPoll is DefaultMaxPollInterval or poll when that is longer. A
// negative interval, or a maximum shorter than the interval, is an error.
func PollIntervals(poll, maxPoll time.Duration) (time.Duration, time.Duration, error) {
	if poll < 0 || maxPoll < 0 {
		return 0, 0, errors.New("cannot use a negative poll interval")
	}
	if poll == 0 {
		poll = DefaultPollInterval
	}
	switch {
	case maxPoll == 0:
		maxPoll = max(DefaultMaxPollInterval, poll)
	case maxPoll < poll:
		return 0, 0, fmt.Errorf("cannot use a maximum poll interval of %s, shorter than the poll interval of %s", maxPoll, poll)
	}
	return poll, maxPoll, nil
}

// ParseEndpoint parses raw, the URL of a provider's API: absolute, http or
// https, with a host and without user information. Its errors never quote
// raw, which may hold credentials: they say what is wrong, to follow
// "cannot use <the field>: ". credential names what to send credentials
// with instead of user information, such as "the token".
func ParseEndpoint(raw, credential string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the input.
		return nil, errors.New("it is not a valid URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("scheme must be http or https, not %q", u.Scheme)
	case u.User != nil:
		return nil, fmt.Errorf("it must not contain user information; use %s", credential)
	case u.Host == "" || u.Opaque != "":
		return nil, errors.New("it must be absolute, with a host")
	}
	return u, nil
}
