// Package hrtime waits for short, exact durations.
//
// A Go timer fires with millisecond granularity when its process is idle:
// the runtime then sleeps in epoll_wait, whose timeout is in milliseconds,
// rounding any shorter wait up to a whole one. That is ten frame times at
// 100 Mbit/s, and a host agent or a switch port is idle most of the time.
// On Linux a Timer is a timerfd parked in Go's netpoller instead: the
// kernel's high-resolution timer makes it readable on time, and the waiting
// goroutine holds no thread meanwhile (nanosleep would hold its P, which
// with GOMAXPROCS=1 stops everything else in the process).
package hrtime
