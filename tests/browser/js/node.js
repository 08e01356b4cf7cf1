// The client library in Node with connect-node's gRPC-Web transport over
// HTTP/1.1, driven like the page: each line on stdin is a JSON object
// {"js": body} whose body runs as an async function of xip83; its result
// (or error) is one JSON line on stdout.
import { createGrpcWebTransport } from "@connectrpc/connect-node";
import { createInterface } from "node:readline";
import * as lib from "./xip83client.js";

const xip83 = {
	...lib,
	transport: (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
};
const AsyncFunction = (async () => {}).constructor;
const lines = createInterface({ input: process.stdin });
let chain = Promise.resolve();

lines.on("line", (line) => {
	chain = chain.then(async () => {
		let out;
		try {
			out = { ok: await new AsyncFunction("xip83", JSON.parse(line).js)(xip83) };
		} catch (e) {
			out = { error: String(e && e.stack || e) };
		}
		process.stdout.write(JSON.stringify(out === undefined ? null : out) + "\n");
	});
});
lines.on("close", () => chain.then(() => process.exit(0)));
