// Package switchtest holds the end-to-end tests of the embedded switch:
// hosts in network namespaces forwarded by the tor.p4 pipeline on the
// AF_PACKET dataplane, programmed only over P4Runtime. They need root and
// skip otherwise.
package switchtest
