package node

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaMetrics are what this node's Kafka clients (its tasks', the
// catalog's, the cluster member's, subscriptions') did with the
// brokers: connections, requests by kind and outcome, their time, the
// bytes both ways and the throttling brokers imposed. One value is a
// kgo hook every client of the node gets (kgo.WithHooks).
type kafkaMetrics struct {
	connects    *prometheus.CounterVec
	disconnects prometheus.Counter
	open        atomic.Int64 // connections open now
	connections prometheus.GaugeFunc
	requests    *prometheus.CounterVec
	reqTime     *prometheus.HistogramVec
	written     prometheus.Counter
	read        prometheus.Counter
	throttled   prometheus.Counter

	// series are requests' and reqTime's series by request key, made on
	// first use: looking one up by its label values hashes them, per
	// request.
	series [128]atomic.Pointer[kafkaRequestSeries]
}

type kafkaRequestSeries struct {
	ok, failed prometheus.Counter
	time       prometheus.Observer
}

func newKafkaMetrics() *kafkaMetrics {
	m := &kafkaMetrics{
		connects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_kafka_connects_total",
			Help: "Connections this node's Kafka clients opened to brokers, by outcome (ok, error); a broker that refuses counts each attempt.",
		}, []string{"outcome"}),
		disconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "basin_kafka_disconnects_total",
			Help: "Connections to brokers this node's Kafka clients closed or lost.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_kafka_requests_total",
			Help: "Requests this node's Kafka clients sent to brokers, by request (Produce, Fetch, EndTxn, ...) and outcome (ok, error: the request could not be written or its response read).",
		}, []string{"request", "outcome"}),
		reqTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "basin_kafka_request_duration_seconds",
			Help:    "Time from writing a request to a broker to reading its response, by request; a Fetch's includes the time the broker waited for records.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14), // 100µs to ~15s
		}, []string{"request"}),
		written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "basin_kafka_written_bytes_total",
			Help: "Bytes this node's Kafka clients wrote to brokers.",
		}),
		read: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "basin_kafka_read_bytes_total",
			Help: "Bytes this node's Kafka clients read from brokers.",
		}),
		throttled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "basin_kafka_throttled_seconds_total",
			Help: "Time brokers throttled this node's Kafka clients (quotas).",
		}),
	}
	m.connections = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "basin_kafka_connections",
		Help: "Connections this node's Kafka clients hold open to brokers.",
	}, func() float64 { return float64(m.open.Load()) })
	m.connects.WithLabelValues("ok")
	m.connects.WithLabelValues("error")
	return m
}

func (m *kafkaMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.connects, m.disconnects, m.connections, m.requests, m.reqTime, m.written, m.read, m.throttled}
}

// opt is the client option that reports to m.
func (m *kafkaMetrics) opt() kgo.Opt { return kgo.WithHooks(m) }

func (m *kafkaMetrics) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		m.connects.WithLabelValues("error").Inc()
		return
	}
	m.open.Add(1)
	m.connects.WithLabelValues("ok").Inc()
}

func (m *kafkaMetrics) OnBrokerDisconnect(kgo.BrokerMetadata, net.Conn) {
	m.open.Add(-1)
	m.disconnects.Inc()
}

func (m *kafkaMetrics) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	m.written.Add(float64(e2e.BytesWritten))
	m.read.Add(float64(e2e.BytesRead))
	s := m.seriesOf(key)
	if e2e.Err() != nil {
		s.failed.Inc()
		return
	}
	s.ok.Inc()
	s.time.Observe(e2e.DurationE2E().Seconds())
}

func (m *kafkaMetrics) OnBrokerThrottle(_ kgo.BrokerMetadata, interval time.Duration, _ bool) {
	m.throttled.Add(interval.Seconds())
}

// seriesOf returns the series of requests with key.
func (m *kafkaMetrics) seriesOf(key int16) *kafkaRequestSeries {
	name := kmsg.NameForKey(key)
	if name == "" {
		name = "Unknown"
	}
	mk := func() *kafkaRequestSeries {
		return &kafkaRequestSeries{
			ok:     m.requests.WithLabelValues(name, "ok"),
			failed: m.requests.WithLabelValues(name, "error"),
			time:   m.reqTime.WithLabelValues(name),
		}
	}
	if key < 0 || int(key) >= len(m.series) {
		return mk()
	}
	if s := m.series[key].Load(); s != nil {
		return s
	}
	m.series[key].CompareAndSwap(nil, mk())
	return m.series[key].Load()
}
