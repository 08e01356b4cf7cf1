// The page's script: the client library on window.xip83, with
// connect-web's gRPC-Web transport (the browser's fetch).
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import * as lib from "./xip83client.js";

window.xip83 = {
	...lib,
	// binary or, with text, application/grpc-web-text (base64)
	transport: (baseUrl, text) => createGrpcWebTransport({ baseUrl, useBinaryFormat: !text }),
};
document.title = "xip83 ready";
