// The page's script: the client library on window.xip83, with
// connect-web's gRPC-Web transport (the browser's fetch).
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import * as lib from "./xip83client.js";

window.xip83 = {
	...lib,
	// application/grpc-web+proto (connect-web has no grpc-web-text)
	transport: (baseUrl) => createGrpcWebTransport({ baseUrl, useBinaryFormat: true }),
};
document.title = "xip83 ready";
