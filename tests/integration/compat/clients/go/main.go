// franz-go client program for the Shale compatibility matrix (see ../../README.md).
//
//	franz-compat create|produce|consume --bootstrap H:P --topic T [--partitions N]
//	    [--first I --count N --codecs a,b] [--group G --member M]
//
// Prints one JSON object per line on stdout. The consumer uses franz-go's defaults (cooperative
// sticky balancing) with BlockRebalanceOnPoll, so a rebalance can only happen between polls,
// after the records of the previous poll were committed.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var outMu sync.Mutex

func emit(v map[string]any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}

func key(i int) string { return "key-" + strconv.Itoa(i%1000) }

func value(i int) string {
	return "value-" + strconv.Itoa(i) + "-" + strings.Repeat(string(rune('a'+i%26)), i%500)
}

func codecOpt(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.NoCompression(), fmt.Errorf("unknown codec %q", name)
}

type args struct {
	bootstrap, topic, codecs, group, member string
	partitions, first, count                int
}

func create(a args) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(a.bootstrap))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := adm.CreateTopics(ctx, int32(a.partitions), 1, nil, a.topic)
	if err != nil {
		return err
	}
	if err := res.Error(); err != nil {
		return err
	}
	emit(map[string]any{"ev": "created", "topic": a.topic})
	return nil
}

func produce(a args) error {
	codecs := strings.Split(a.codecs, ",")
	n := len(codecs)
	failures := 0
	for ci, codec := range codecs {
		lo := a.first + (ci*a.count+n-1)/n
		hi := a.first + ((ci+1)*a.count+n-1)/n
		cc, err := codecOpt(codec)
		if err != nil {
			return err
		}
		// Idempotence is franz-go's default; acks=all is required by it and set explicitly.
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(a.bootstrap),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerBatchCompression(cc),
			kgo.ProducerLinger(5*time.Millisecond),
			kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		)
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := lo; i < hi; i++ {
			r := &kgo.Record{
				Topic: a.topic,
				Key:   []byte(key(i)),
				Value: []byte(value(i)),
				Headers: []kgo.RecordHeader{
					{Key: "idx", Value: []byte(strconv.Itoa(i))},
					{Key: "codec", Value: []byte(codec)},
				},
			}
			idx := i
			wg.Add(1)
			cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					failures++
					mu.Unlock()
					emit(map[string]any{"ev": "error", "i": idx, "error": err.Error()})
					return
				}
				emit(map[string]any{"ev": "ack", "i": idx, "p": r.Partition, "o": r.Offset})
			})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err = cl.Flush(ctx)
		cancel()
		wg.Wait()
		cl.Close()
		if err != nil {
			return err
		}
	}
	emit(map[string]any{"ev": "done"})
	if failures > 0 {
		return fmt.Errorf("%d records failed", failures)
	}
	return nil
}

func partList(m map[string][]int32) []int32 {
	out := []int32{}
	for _, ps := range m {
		out = append(out, ps...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func consume(a args) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	emit(map[string]any{"ev": "started"}) // from here on SIGTERM means a clean close
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-sigs
		cancel()
	}()

	var cl *kgo.Client
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(a.bootstrap),
		kgo.ClientID(a.member),
		kgo.ConsumerGroup(a.group),
		kgo.ConsumeTopics(a.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(10*time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			emit(map[string]any{"ev": "assigned", "parts": partList(m)})
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, m map[string][]int32) {
			// Every polled record was committed before the rebalance was allowed; commit again
			// in case a commit failed, so the next owner starts where this member stopped.
			if err := c.CommitUncommittedOffsets(ctx); err != nil {
				emit(map[string]any{"ev": "commit_failed", "error": err.Error()})
			}
			emit(map[string]any{"ev": "revoked", "parts": partList(m)})
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			emit(map[string]any{"ev": "revoked", "parts": partList(m)})
		}),
	)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		fetches := cl.PollRecords(ctx, 500)
		fetches.EachError(func(t string, p int32, err error) {
			if ctx.Err() == nil {
				emit(map[string]any{"ev": "error", "error": fmt.Sprintf("%s/%d: %v", t, p, err)})
			}
		})
		recs := fetches.Records()
		for _, r := range recs {
			h := sha256.Sum256(r.Value)
			hdrs := make([][]string, 0, len(r.Headers))
			for _, hd := range r.Headers {
				hdrs = append(hdrs, []string{hd.Key, string(hd.Value)})
			}
			emit(map[string]any{
				"ev": "rec", "p": r.Partition, "o": r.Offset, "k": string(r.Key),
				"vh": hex.EncodeToString(h[:]), "h": hdrs,
			})
		}
		if len(recs) > 0 {
			cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := cl.CommitRecords(cctx, recs...)
			ccancel()
			if err != nil {
				emit(map[string]any{"ev": "commit_failed", "error": err.Error()})
			} else {
				emit(map[string]any{"ev": "commit", "n": len(recs)})
			}
		}
		cl.AllowRebalance()
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	if err := cl.CommitUncommittedOffsets(cctx); err != nil {
		emit(map[string]any{"ev": "commit_failed", "error": err.Error()})
	}
	ccancel()
	cl.AllowRebalance()
	cl.Close() // leaves the group
	emit(map[string]any{"ev": "closed"})
	return nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: franz-compat create|produce|consume --bootstrap H:P --topic T ...")
		os.Exit(2)
	}
	cmd := os.Args[1]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	var a args
	fs.StringVar(&a.bootstrap, "bootstrap", "", "bootstrap server")
	fs.StringVar(&a.topic, "topic", "", "topic")
	fs.IntVar(&a.partitions, "partitions", 6, "partitions (create)")
	fs.IntVar(&a.first, "first", 0, "first record index (produce)")
	fs.IntVar(&a.count, "count", 0, "record count (produce)")
	fs.StringVar(&a.codecs, "codecs", "none,gzip,snappy,lz4,zstd", "codecs (produce)")
	fs.StringVar(&a.group, "group", "", "group (consume)")
	fs.StringVar(&a.member, "member", "", "member name (consume)")
	if err := fs.Parse(os.Args[2:]); err != nil {
		os.Exit(2)
	}
	var err error
	switch cmd {
	case "create":
		err = create(a)
	case "produce":
		err = produce(a)
	case "consume":
		err = consume(a)
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "franz-compat:", err)
		os.Exit(1)
	}
}
