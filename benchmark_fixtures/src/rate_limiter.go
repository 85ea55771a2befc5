// Package ratelimit throttles outgoing calls with a token bucket per client key.
package ratelimit

import (
	"sync"
	"time"
)

// Bucket refills at Rate tokens per second up to Burst; each request spends one token.
type Bucket struct {
	mu       sync.Mutex
	rate     float64
	burst    float64
	tokens   float64
	lastFill time.Time
}

// NewBucket returns a full bucket.
func NewBucket(rate float64, burst int) *Bucket {
	return &Bucket{rate: rate, burst: float64(burst), tokens: float64(burst), lastFill: time.Now()}
}

// Allow reports whether a request may proceed now, spending a token when it may.
func (b *Bucket) Allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.tokens += now.Sub(b.lastFill).Seconds() * b.rate
	if b.tokens > b.burst {
		b.tokens = b.burst
	}
	b.lastFill = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Limiter keeps one bucket per client key (API token, IP address).
type Limiter struct {
	mu      sync.Mutex
	buckets map[string]*Bucket
	rate    float64
	burst   int
}

// NewLimiter allows `rate` requests per second per key with bursts of `burst`.
func NewLimiter(rate float64, burst int) *Limiter {
	return &Limiter{buckets: map[string]*Bucket{}, rate: rate, burst: burst}
}

// Allow checks the bucket of `key`, creating it on first use.
func (l *Limiter) Allow(key string) bool {
	l.mu.Lock()
	bucket, ok := l.buckets[key]
	if !ok {
		bucket = NewBucket(l.rate, l.burst)
		l.buckets[key] = bucket
	}
	l.mu.Unlock()
	return bucket.Allow()
}
