// The broker's stdout read as line-delimited JSON-RPC, for the benchmarks that speak it
// raw: `onMessage` gets each line parsed, however the stream cut it into chunks.
export function onJsonLines(stream, onMessage) {
  let buf = '';
  stream.on('data', (d) => {
    buf += d;
    for (let nl; (nl = buf.indexOf('\n')) >= 0;) {
      const msg = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      onMessage(msg);
    }
  });
}
