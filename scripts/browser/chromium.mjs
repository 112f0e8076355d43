// The one headless Chromium of a browser test run. `node chromium.mjs` starts it as a server and
// prints its WebSocket address; each test then connects to it with `launch()` (CHROMIUM_WS names
// the server), so all the tests share one Chromium; run alone, a test launches its own.
import { chromium } from 'playwright-core';

const options = {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
};

/// The shared Chromium when CHROMIUM_WS names it, else one of the test's own. `close()` on a
/// shared one closes the test's pages and contexts and leaves Chromium to the next test.
export function launch() {
  return process.env.CHROMIUM_WS ? chromium.connect(process.env.CHROMIUM_WS) : chromium.launch(options);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const server = await chromium.launchServer(options);
  console.log(server.wsEndpoint());
  // Until the run script closes our standard input (or ends).
  process.stdin.resume();
  process.stdin.on('end', () => server.close().then(() => process.exit(0)));
}
