// The client side of the browser tests, bundled twice by browsertest.py
// (esbuild): for the page (connect-web, the browser's WebSocket) and for
// Node (connect-node). It sits beside the classes protoc-gen-es generated
// at test time. Streams run in the background and keep what they see as
// events; the Python test asks for them with take(), so it decides when rows
// are written and what must have arrived by then.
import { createClient } from "@connectrpc/connect";
import { create, toBinary, fromBinary } from "@bufbuild/protobuf";
import { MlsApi } from "./mls_api_service_pb.js";
import { QueryApi } from "./d14n_query_api_service_pb.js";
import * as v3 from "./xip83/mls_api_pb.js";
import * as d14n from "./xip83/d14n_message_api_pb.js";
import * as env from "./xip83/d14n_envelopes_pb.js";

const streams = new Map();

export function hex(bytes) {
	return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function unhex(s) {
	const out = new Uint8Array(s.length / 2);
	for (let i = 0; i < out.length; i++)
		out[i] = parseInt(s.substr(2 * i, 2), 16);
	return out;
}

// (originator, sequence, topic hex) of an OriginatorEnvelope.
function position(e) {
	const u = fromBinary(env.UnsignedOriginatorEnvelopeSchema, e.unsignedOriginatorEnvelope);
	const p = fromBinary(env.PayerEnvelopeSchema, u.payerEnvelopeBytes);
	const c = fromBinary(env.ClientEnvelopeSchema, p.unsignedClientEnvelope);
	return [u.originatorNodeId, Number(u.originatorSequenceId), hex(c.aad ? c.aad.targetTopic : [])];
}

// One stream's events, and the waiters of take().
class Events {
	constructor() {
		this.list = [];
		this.read = 0;
		this.wake = null;
	}
	push(e) {
		e.t = Date.now();
		this.list.push(e);
		if (this.wake)
			this.wake();
	}
	// The next n events (fewer if the time runs out first).
	async take(n, ms) {
		const until = Date.now() + ms;
		while (this.list.length - this.read < n && Date.now() < until)
			await new Promise((ok) => {
				this.wake = ok;
				setTimeout(ok, Math.max(1, until - Date.now()));
			});
		const out = this.list.slice(this.read, this.read + n);
		this.read += out.length;
		return out;
	}
}

function streamOf(id) {
	const s = streams.get(id);
	if (!s)
		throw new Error("no stream " + id);
	return s;
}

// ------------------------------------------------------------ gRPC-Web

// Starts a server-streaming call: method "group" (SubscribeGroupMessages,
// filters [[group_id hex, id_cursor]]), "welcome" (SubscribeWelcomeMessages,
// [[installation_key hex, id_cursor]]) or "topics" (SubscribeTopics, filters
// [[topic hex, {originator: sequence}]]). Events: headers, message, status,
// envelopes, trailers, end.
export function grpcWeb(transport, id, method, filters) {
	const ev = new Events();
	const abort = new AbortController();
	streams.set(id, { ev, abort });
	const opts = {
		signal: abort.signal,
		onHeader: (h) => ev.push({ type: "headers", subscribed: h.get("subscribed") }),
		onTrailer: (t) => ev.push({ type: "trailers", status: t.get("grpc-status") }),
	};
	let call;
	if (method === "group") {
		const c = createClient(MlsApi, transport);
		call = c.subscribeGroupMessages({
			filters: filters.map(([g, cur]) => ({ groupId: unhex(g), idCursor: BigInt(cur) })),
		}, opts);
	} else if (method === "welcome") {
		const c = createClient(MlsApi, transport);
		call = c.subscribeWelcomeMessages({
			filters: filters.map(([k, cur]) => ({ installationKey: unhex(k), idCursor: BigInt(cur) })),
		}, opts);
	} else {
		const c = createClient(QueryApi, transport);
		call = c.subscribeTopics({
			filters: filters.map(([t, cur]) => ({
				topic: unhex(t),
				lastSeen: { nodeIdToSequenceId: Object.fromEntries(Object.entries(cur || {}).map(([k, v]) => [k, BigInt(v)])) },
			})),
		}, opts);
	}
	(async () => {
		try {
			for await (const m of call) {
				if (method === "group")
					ev.push({ type: "message", id: Number(m.version.value.id), group: hex(m.version.value.groupId) });
				else if (method === "welcome")
					ev.push({ type: "message", id: Number(m.version.value.id), key: hex(m.version.value.installationKey) });
				else if (m.response.case === "statusUpdate")
					ev.push({ type: "status", status: m.response.value.status });
				else
					ev.push({ type: "envelopes", rows: m.response.value.envelopes.map(position) });
			}
			ev.push({ type: "end", code: 0, message: "" });
		} catch (e) {
			ev.push({ type: "end", code: e.code === undefined ? -1 : e.code, message: String(e.rawMessage || e.message) });
		}
	})();
	return id;
}

export function cancel(id) {
	streamOf(id).abort.abort();
}

export function take(id, n, ms) {
	return streamOf(id).ev.take(n, ms);
}

// ------------------------------------------------------------ WebSocket

// XIP-83 Subscribe on the browser's WebSocket (subprotocol xip83.v1): each
// binary message one gRPC length-prefixed message; the last one flagged 0x80
// with the status as trailer text. With resubscribe, a stream closed by the
// other side reconnects and adds its topics again from the cursors of the
// rows it has, so a gateway restart loses nothing and repeats nothing.
export class Xip83Socket {
	constructor(url, d14nBinding, resubscribe) {
		this.url = url;
		this.d14n = d14nBinding;
		this.pkg = d14nBinding ? d14n : v3;
		this.resubscribe = resubscribe;
		this.ev = new Events();
		this.topics = new Map();	// topic hex -> cursor (id, or {originator: sequence})
		this.closing = false;
		this.reconnects = 0;
		this.nextMutate = 1000000;
		this.connect();
	}

	connect() {
		const ws = new WebSocket(this.url, "xip83.v1");
		ws.binaryType = "arraybuffer";
		this.ws = ws;
		this.opened = new Promise((ok, fail) => {
			ws.onopen = () => {
				this.ev.push({ type: "open", protocol: ws.protocol });
				ok();
			};
			ws.onerror = () => fail(new Error("WebSocket error"));
		});
		this.opened.catch(() => {});
		ws.onmessage = (m) => this.received(new Uint8Array(m.data), typeof m.data === "string");
		ws.onclose = (c) => {
			this.ev.push({ type: "close", code: c.code, reason: c.reason });
			if (this.resubscribe && !this.closing)
				setTimeout(() => this.again(), 200);
		};
	}

	// Back after a close: the same topics from their cursors.
	async again() {
		this.reconnects++;
		this.connect();
		try {
			await this.opened;
		} catch (e) {
			return;		// onclose follows and tries again
		}
		if (this.topics.size)
			this.mutate(this.nextMutate++, [...this.topics].map(([t, c]) => [t, c]), []);
	}

	received(b, text) {
		if (text || b.length < 5) {
			this.ev.push({ type: "bad", length: b.length, text });
			return;
		}
		const len = new DataView(b.buffer, b.byteOffset).getUint32(1);
		const body = b.subarray(5, 5 + len);
		if (b[0] & 0x80) {
			const t = new TextDecoder().decode(body);
			const st = /grpc-status: *(\d+)/.exec(t);
			const msg = /grpc-message: *([^\r\n]*)/.exec(t);
			this.ev.push({ type: "status", code: st ? Number(st[1]) : -1, message: msg ? msg[1] : "" });
			return;
		}
		const r = fromBinary(this.pkg.SubscribeResponseSchema, body).version.value.response;
		const e = { type: r.case };
		switch (r.case) {
		case "started":
			e.keepalive = r.value.keepaliveIntervalMs;
			break;
		case "ping":
			// the in-band keepalive: answered as the clients do
			this.send({ case: "pong", value: { nonce: r.value.nonce } });
			e.nonce = Number(r.value.nonce);
			break;
		case "pong":
			e.nonce = Number(r.value.nonce);
			break;
		case "topicsLive":
			e.topics = r.value.topics.map(hex);
			break;
		case "catchupComplete":
			e.mutate = Number(r.value.mutateId);
			break;
		case "messages":
			e.mutate = Number(r.value.mutateId);
			e.rows = r.value.groupMessages.map((m) => ["00" + hex(m.version.value.groupId), Number(m.version.value.id)])
				.concat(r.value.welcomeMessages.map((m) => ["01" + hex(m.version.value.installationKey), Number(m.version.value.id)]));
			for (const [t, i] of e.rows)
				if (this.topics.has(t) && this.topics.get(t) < i)
					this.topics.set(t, i);
			break;
		case "envelopes":
			e.mutate = Number(r.value.mutateId);
			e.rows = r.value.envelopes.map(position);
			for (const [node, seq, t] of e.rows) {
				const c = this.topics.get(t);
				if (c && (c[node] || 0) < seq)
					c[node] = seq;
			}
			break;
		}
		this.ev.push(e);
	}

	send(request) {
		const m = create(this.pkg.SubscribeRequestSchema, { version: { case: "v1", value: { request } } });
		const body = toBinary(this.pkg.SubscribeRequestSchema, m);
		const out = new Uint8Array(5 + body.length);
		new DataView(out.buffer).setUint32(1, body.length);
		out.set(body, 5);
		this.ws.send(out);
	}

	// adds: [[topic hex, cursor]] (an id for v3, {originator: sequence} for
	// d14n); removes: [topic hex].
	mutate(mutateId, adds, removes) {
		for (const [t, c] of adds)
			this.topics.set(t, this.d14n ? { ...(c || {}) } : (c || 0));
		for (const t of removes)
			this.topics.delete(t);
		const subs = adds.map(([t, c]) => this.d14n
			? { topic: unhex(t), lastSeen: { nodeIdToSequenceId: Object.fromEntries(Object.entries(c || {}).map(([k, v]) => [k, BigInt(v)])) } }
			: { topic: unhex(t), idCursor: BigInt(c || 0) });
		this.send({ case: "mutate", value: { adds: subs, removes: removes.map(unhex), mutateId: BigInt(mutateId) } });
	}

	ping(nonce) {
		this.send({ case: "ping", value: { nonce: BigInt(nonce) } });
	}

	close() {
		this.closing = true;
		this.ws.close(1000);
	}
}

export async function wsOpen(id, url, d14nBinding, resubscribe) {
	const s = new Xip83Socket(url, d14nBinding, resubscribe);
	streams.set(id, s);
	try {
		await s.opened;
	} catch (e) {
		return false;
	}
	return true;
}

export function ws(id) {
	return streamOf(id);
}
