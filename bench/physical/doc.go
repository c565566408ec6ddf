// Package physical measures what this machine can do at best on the
// produce path's basic operations, to set broker profiles against:
// copying memory, CRC-32C (the record batch checksum, Go's stdlib, which
// uses SSE4.2/CLMUL on amd64), TCP over loopback, writing to the page
// cache and fsync. Each benchmark reports bytes per second:
//
//	go test -run '^$' -bench . -count 6 ./bench/physical
package physical
