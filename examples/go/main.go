// xip83-go-node: what a node server does with xip83, in Go with pgx v4.
//
// It replays a wave (the topics from their floors up to a ceiling pinned when
// the wave starts, paged with the scan function), then follows the live feed:
// LISTEN xip83_live on a connection of its own, and on every notice (or every
// second without one) fetch (cursor, horizon] with the live fetch function,
// carrying the late cursor. A notice is only a wake-up: positions come from
// the fetches, never from a notice. When the server goes away it reconnects,
// LISTENs again and fetches from its cursors, so a restart loses and repeats
// nothing.
//
// One line per row on stdout, as xip83-tail prints them:
//
//	group <00 || group id, hex> <id> <data bytes>[ late]
//	envelope <topic hex> <originator>:<sequence> <envelope bytes>[ late]
//
// Build offline against Debian's packages (golang-go, golang-github-jackc-pgx-v4-dev):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o xip83-go-node ./examples/go
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
)

type options struct {
	dsn        string
	kind       string // "group" or "envelope"
	source     string // the tracked table; "" is xip83's own
	blobSource string // d14n: the blob table of a meta/blob pair
	topics     [][]byte
	page       int
	poll       time.Duration
	startFloor int64 // d14n: the cursor meaning "nothing seen"
}

// node holds what a node keeps for one consumer: cursors survive reconnects.
type node struct {
	opt    options
	out    *bufio.Writer
	db     *pgx.Conn // queries
	listen *pgx.Conn // LISTEN xip83_live only

	late int64 // late cursor to pass next

	groupAfter int64           // group: the highest id received
	after      map[int32]int64 // envelopes: per originator, the highest sequence received

	// Rows the wave delivered at or below its ceiling: the late lane may bring
	// one of them again (a late write the wave's snapshot already saw).
	waveGroup    map[int64]bool
	waveEnvelope map[[2]int64]bool
}

func main() {
	var opt options
	var topics string
	flag.StringVar(&opt.dsn, "dsn", "", "connection string (default: PG* environment)")
	flag.StringVar(&opt.kind, "kind", "group", "group or envelope")
	flag.StringVar(&opt.source, "source", "", "the node's tracked table (default: xip83's own)")
	flag.StringVar(&opt.blobSource, "blob-source", "", "envelopes: the blob table of a meta/blob pair")
	flag.StringVar(&topics, "topics", "", "comma-separated hex topics (default: every stored topic, and every live row)")
	flag.IntVar(&opt.page, "page", 500, "rows per page and per live fetch")
	flag.DurationVar(&opt.poll, "poll", time.Second, "fetch at least this often without a notice")
	flag.Int64Var(&opt.startFloor, "start-floor", -1, "envelopes: the cursor of an originator not seen yet (-1: sequence 0 is a position too)")
	flag.Parse()
	if opt.kind != "group" && opt.kind != "envelope" {
		fatalf("-kind must be group or envelope")
	}
	if opt.page < 1 {
		fatalf("-page must be at least 1")
	}
	for _, t := range strings.Split(topics, ",") {
		if t == "" {
			continue
		}
		var b []byte
		if _, err := fmt.Sscanf(t, "%x", &b); err != nil {
			fatalf("-topics: %q is not hex", t)
		}
		opt.topics = append(opt.topics, b)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	n := &node{opt: opt, out: bufio.NewWriter(os.Stdout), after: map[int32]int64{},
		waveGroup: map[int64]bool{}, waveEnvelope: map[[2]int64]bool{}}
	defer n.out.Flush()

	if err := n.connect(ctx); err != nil {
		fatalf("connect: %v", err)
	}
	if err := n.wave(ctx); err != nil {
		fatalf("wave: %v", err)
	}
	n.follow(ctx)
}

func fatalf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "xip83-go-node: "+format+"\n", args...)
	os.Exit(1)
}

// connect opens both connections and LISTENs. LISTEN runs in autocommit, so it
// is committed before the first fetch: no notice after it can be missed.
func (n *node) connect(ctx context.Context) error {
	n.close()
	db, err := pgx.Connect(ctx, n.opt.dsn)
	if err != nil {
		return err
	}
	listen, err := pgx.Connect(ctx, n.opt.dsn)
	if err != nil {
		db.Close(ctx)
		return err
	}
	if _, err := listen.Exec(ctx, "LISTEN xip83_live"); err != nil {
		db.Close(ctx)
		listen.Close(ctx)
		return err
	}
	n.db, n.listen = db, listen
	return nil
}

func (n *node) close() {
	if n.db != nil {
		n.db.Close(context.Background())
	}
	if n.listen != nil {
		n.listen.Close(context.Background())
	}
	n.db, n.listen = nil, nil
}

// call builds "xip83.fn($1, ..., $k)" and its arguments: the given ones,
// then the node's table (and blob table) when one is followed. With none the
// functions default to xip83's own tables, so the same calls work before and
// after a node's table is tracked. Table names are the only string arguments.
func (n *node) call(fn string, blob bool, args ...interface{}) (string, []interface{}) {
	if n.opt.source != "" {
		args = append(args, n.opt.source)
		if blob && n.opt.blobSource != "" {
			args = append(args, n.opt.blobSource)
		}
	}
	params := make([]string, len(args))
	for i, a := range args {
		params[i] = fmt.Sprintf("$%d", i+1)
		if _, table := a.(string); table {
			params[i] += "::text::regclass"
		}
	}
	return "xip83." + fn + "(" + strings.Join(params, ", ") + ")", args
}

func (n *node) table(own string) string {
	if n.opt.source == "" {
		return own
	}
	return n.opt.source
}

// wave: the late cursor first, then the ceiling (pinned), then the topics'
// rows up to it, page by page. The live feed goes on from the ceiling.
func (n *node) wave(ctx context.Context) error {
	sql, args := n.call("late_cursor", false)
	if err := n.db.QueryRow(ctx, "SELECT "+sql, args...).Scan(&n.late); err != nil {
		return err
	}
	if n.opt.kind == "group" {
		return n.groupWave(ctx)
	}
	return n.envelopeWave(ctx)
}

// topics: the ones given, or every topic stored up to the ceiling (read after
// the ceiling was pinned, so every row at or below it is visible or late).
func (n *node) topicList(ctx context.Context, table, column, where string, args ...interface{}) ([][]byte, error) {
	if len(n.opt.topics) > 0 {
		return n.opt.topics, nil
	}
	var topics [][]byte
	rows, err := n.db.Query(ctx, fmt.Sprintf("SELECT DISTINCT %s FROM %s WHERE %s",
		column, pgx.Identifier(strings.Split(table, ".")).Sanitize(), where), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var t []byte
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		topics = append(topics, t)
	}
	return topics, rows.Err()
}

func (n *node) groupWave(ctx context.Context) error {
	var ceiling int64
	sql, args := n.call("group_ceiling", false)
	if err := n.db.QueryRow(ctx, "SELECT "+sql, args...).Scan(&ceiling); err != nil {
		return err
	}
	source := n.table("xip83.group_messages")
	topics, err := n.topicList(ctx, source, "group_id", "id <= $1", ceiling)
	if err != nil {
		return err
	}
	floors := make([]int64, len(topics))
	cursor := int64(0)
	if len(topics) > 0 {
		err = n.pages(func() (pgx.Rows, error) {
			return n.db.Query(ctx, "SELECT id, group_id, data FROM xip83.group_wave_scan("+
				"$1, $2, $3, $4, $5, $6::text::regclass)",
				topics, floors, cursor, ceiling, n.opt.page, source)
		}, func(rows pgx.Rows) error {
			var id int64
			var topic, data []byte
			if err := rows.Scan(&id, &topic, &data); err != nil {
				return err
			}
			n.printGroup(id, topic, data, false)
			n.waveGroup[id] = true
			cursor = id
			return nil
		})
		if err != nil {
			return err
		}
	}
	n.groupAfter = ceiling
	fmt.Fprintf(os.Stderr, "wave done: %d topics up to %d\n", len(topics), ceiling)
	return nil
}

func (n *node) envelopeWave(ctx context.Context) error {
	source := n.table("xip83.envelopes")
	sql := "SELECT originator_node_id, max_sequence_id FROM xip83.originator_ceilings(NULL, $1::text::regclass)"
	rows, err := n.db.Query(ctx, sql, source)
	if err != nil {
		return err
	}
	var ceilNodes []int32
	var ceilings []int64
	for rows.Next() {
		var node int32
		var ceiling int64
		if err := rows.Scan(&node, &ceiling); err != nil {
			rows.Close()
			return err
		}
		ceilNodes = append(ceilNodes, node)
		ceilings = append(ceilings, ceiling)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	topics, err := n.topicList(ctx, source, "topic", "true")
	if err != nil {
		return err
	}
	// one cursor entry per (topic, originator), every one at "nothing seen"
	var curTopics [][]byte
	var curNodes []int32
	var curSeqs []int64
	for _, t := range topics {
		for _, node := range ceilNodes {
			curTopics = append(curTopics, t)
			curNodes = append(curNodes, node)
			curSeqs = append(curSeqs, n.opt.startFloor)
		}
	}
	var blob interface{}
	if n.opt.blobSource != "" {
		blob = n.opt.blobSource
	}
	scanNode, scanSeq := int32(0), int64(0)
	if len(curTopics) > 0 {
		err = n.pages(func() (pgx.Rows, error) {
			return n.db.Query(ctx, "SELECT originator_node_id, originator_sequence_id, topic,"+
				" originator_envelope FROM xip83.envelope_wave_scan($1, $2, $3, $4, $5, $6, $7,"+
				" $8, $9::text::regclass, $10::text::regclass)",
				curTopics, curNodes, curSeqs, ceilNodes, ceilings, scanNode, scanSeq, n.opt.page,
				source, blob)
		}, func(rows pgx.Rows) error {
			var node int32
			var seq int64
			var topic, env []byte
			if err := rows.Scan(&node, &seq, &topic, &env); err != nil {
				return err
			}
			n.printEnvelope(node, seq, topic, env, false)
			n.waveEnvelope[[2]int64{int64(node), seq}] = true
			scanNode, scanSeq = node, seq
			return nil
		})
		if err != nil {
			return err
		}
	}
	for i, node := range ceilNodes {
		n.after[node] = ceilings[i]
	}
	fmt.Fprintf(os.Stderr, "wave done: %d topics, %d originators\n", len(topics), len(ceilNodes))
	return nil
}

func (n *node) printGroup(id int64, topic, data []byte, late bool) {
	suffix := ""
	if late {
		suffix = " late"
	}
	fmt.Fprintf(n.out, "group 00%x %d %d%s\n", topic, id, len(data), suffix)
}

func (n *node) printEnvelope(node int32, seq int64, topic, env []byte, late bool) {
	suffix := ""
	if late {
		suffix = " late"
	}
	fmt.Fprintf(n.out, "envelope %x %d:%d %d%s\n", topic, node, seq, len(env), suffix)
}

func (n *node) wanted(topic []byte) bool {
	if len(n.opt.topics) == 0 {
		return true
	}
	for _, t := range n.opt.topics {
		if string(t) == string(topic) {
			return true
		}
	}
	return false
}

// follow: fetch, then sleep until a notice or the poll interval; on a lost
// connection reconnect (backing off) and fetch from the cursors kept here.
func (n *node) follow(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		if n.db == nil {
			if err := n.connect(ctx); err != nil {
				time.Sleep(backoff)
				if backoff < 2*time.Second {
					backoff *= 2
				}
				continue
			}
			fmt.Fprintln(os.Stderr, "feed back")
			backoff = 50 * time.Millisecond
		}
		err := n.fetchAll(ctx)
		if err == nil {
			err = n.waitForNotice(ctx)
		}
		if err != nil && ctx.Err() == nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "X83L0" {
				// late writes owed to us are gone: a real node replays its
				// topics as a wave; here it is reported and fails the run
				fatalf("late-lost: %v", err)
			}
			fmt.Fprintf(os.Stderr, "feed offline (%v)\n", err)
			n.close()
		}
	}
}

// waitForNotice returns on a notice or after the poll interval; the notice's
// payload is not read: a wake-up only (any role may NOTIFY the channel).
func (n *node) waitForNotice(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, n.opt.poll)
	defer cancel()
	_, err := n.listen.WaitForNotification(wctx)
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil) {
		return nil
	}
	return err
}

// pages runs query page after page until a page comes back short, row
// taking each row (and moving what the next query starts from), and flushes
// the output after each page.
func (n *node) pages(query func() (pgx.Rows, error), row func(pgx.Rows) error) error {
	for {
		rows, err := query()
		if err != nil {
			return err
		}
		got := 0
		for rows.Next() {
			if err := row(rows); err != nil {
				rows.Close()
				return err
			}
			got++
		}
		rows.Close()
		n.out.Flush()
		if err := rows.Err(); err != nil || got < n.opt.page {
			return err
		}
	}
}

// fetchAll fetches everything up to the horizon the last fetch read.
func (n *node) fetchAll(ctx context.Context) error {
	if n.opt.kind == "group" {
		return n.pages(func() (pgx.Rows, error) {
			sql, args := n.call("live_group_messages", false, n.groupAfter, n.opt.page, n.late)
			return n.db.Query(ctx, "SELECT id, group_id, data, late_cursor FROM "+sql, args...)
		}, n.groupRow)
	}
	if err := n.originators(ctx); err != nil || len(n.after) == 0 {
		return err
	}
	return n.pages(func() (pgx.Rows, error) {
		var nodes []int32
		var afters []int64
		for node, after := range n.after {
			nodes = append(nodes, node)
			afters = append(afters, after)
		}
		sql, args := n.call("live_envelopes", true, nodes, afters, n.opt.page, n.late)
		return n.db.Query(ctx, "SELECT originator_node_id, originator_sequence_id, topic,"+
			" originator_envelope, late_cursor FROM "+sql, args...)
	}, n.envelopeRow)
}

// groupRow takes one live row: the late cursor it carries, and either a late
// row (at or below the cursor; skipped if the wave sent it) or the next one.
func (n *node) groupRow(rows pgx.Rows) error {
	var id int64
	var topic, data []byte
	if err := rows.Scan(&id, &topic, &data, &n.late); err != nil {
		return err
	}
	late := id <= n.groupAfter
	if late && n.waveGroup[id] {
		return nil
	}
	if !late {
		n.groupAfter = id
	}
	if n.wanted(topic) {
		n.printGroup(id, topic, data, late)
	}
	return nil
}

// envelopeRow: as groupRow, per originator.
func (n *node) envelopeRow(rows pgx.Rows) error {
	var node int32
	var seq int64
	var topic, env []byte
	if err := rows.Scan(&node, &seq, &topic, &env, &n.late); err != nil {
		return err
	}
	late := seq <= n.after[node]
	if late && n.waveEnvelope[[2]int64{int64(node), seq}] {
		return nil
	}
	if !late {
		n.after[node] = seq
	}
	if n.wanted(topic) {
		n.printEnvelope(node, seq, topic, env, late)
	}
	return nil
}

// originators adds those the server has horizons for (new originators appear
// while the node runs) at "nothing seen".
func (n *node) originators(ctx context.Context) error {
	sql, args := n.call("envelope_horizons", false)
	rows, err := n.db.Query(ctx, "SELECT originator_node_id FROM "+sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var node int32
		if err := rows.Scan(&node); err != nil {
			return err
		}
		if _, ok := n.after[node]; !ok {
			n.after[node] = n.opt.startFloor
		}
	}
	return rows.Err()
}
