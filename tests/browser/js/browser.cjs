// Headless Chromium (Debian's, never one of puppeteer's own) driven by
// puppeteer-core for browsertest.py: argv[2] a JSON object {chromium,
// profile, args}; then each line on stdin is {"goto": url}, {"js": body} (body runs
// in the page as an async function) or {"net": true} (the responses since
// the last: [url, protocol, status]); one JSON line answers each. The
// page's console and errors go to stderr.
const puppeteer = require("puppeteer-core");
const readline = require("node:readline");

async function main() {
	const conf = JSON.parse(process.argv[2]);
	const browser = await puppeteer.launch({
		executablePath: conf.chromium,
		headless: true,
		userDataDir: conf.profile,
		// in this program's process group, which the test kills if it must
		detached: false,
		// the machine's network is closed: nothing in the background
		args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--disable-dev-shm-usage", ...conf.args],
	});
	const page = await browser.newPage();
	page.on("console", (m) => process.stderr.write("page: " + m.text() + "\n"));
	page.on("pageerror", (e) => process.stderr.write("page error: " + e + "\n"));
	// the protocol of each response (http/1.1, h2), seen by DevTools
	const net = [];
	const cdp = await page.createCDPSession();
	await cdp.send("Network.enable");
	cdp.on("Network.responseReceived", (e) => net.push([e.response.url, e.response.protocol, e.response.status]));
	const lines = readline.createInterface({ input: process.stdin });
	for await (const line of lines) {
		const cmd = JSON.parse(line);
		let out;
		try {
			if (cmd.goto) {
				const r = await page.goto(cmd.goto, { waitUntil: "load", timeout: 30000 });
				out = { ok: r ? r.status() : null };
			} else if (cmd.net) {
				out = { ok: net.splice(0) };
			} else {
				out = { ok: await page.evaluate("(async () => {" + cmd.js + "})()") };
			}
		} catch (e) {
			out = { error: String(e && e.message || e) };
		}
		process.stdout.write(JSON.stringify(out === undefined ? null : out) + "\n");
	}
	await browser.close();
}

main().catch((e) => {
	process.stderr.write(String(e && e.stack || e) + "\n");
	process.exit(1);
});
