// The TypeScript SDK handles a notification a microtask late, so a progress notification that
// reaches it together with the call's response finds the call gone: it reports it to onerror
// instead of onprogress (typescript-sdk issue 2580). The interop drivers keep those apart, so the
// test still sees every notification the gateway delivered, in order.
export function collectLateProgress(client) {
  const late = [];
  client.onerror = (e) => {
    const m = /unknown token: (.*)$/s.exec(String(e?.message ?? ""));
    if (m) late.push(JSON.parse(m[1]).params.progress);
  };
  return late;
}
