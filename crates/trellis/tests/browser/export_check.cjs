// Loads an exported session in headless Chromium and checks what a reader gets:
// cards present, a card expands on a click, the search box filters, and no request
// leaves the file. Usage: node export_check.cjs CHROMIUM FILE.html SCREENSHOT.png CALLS WORD
// Prints one JSON line of findings; exits 1 when a check fails.
const puppeteer = require('puppeteer-core');

(async () => {
  const [chromium, file, shot, calls, word] = process.argv.slice(2);
  const url = 'file://' + file;
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'],
  });
  const out = { requests: [], errors: [] };
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1100, height: 900 });
    await page.setRequestInterception(true);
    page.on('request', (r) => {
      if (r.url() !== url) {
        out.requests.push(r.url());
        r.abort();
      } else {
        r.continue();
      }
    });
    page.on('pageerror', (e) => out.errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') out.errors.push(m.text()); });
    await page.goto(url, { waitUntil: 'load' });
    out.cards = await page.$$eval('details.call', (d) => d.length);
    out.openBefore = await page.$eval('details.call', (d) => d.open);
    await page.click('details.call > summary');
    out.openAfter = await page.$eval('details.call', (d) => d.open);
    out.bodyShown = await page.$eval('details.call .body', (b) => b.getBoundingClientRect().height > 0);
    out.entries = await page.$$eval('[data-item]', (d) => d.length);
    await page.type('#q', word);
    out.shownAfterSearch = await page.$$eval('[data-item]:not(.hidden)', (d) => d.length);
    out.openMatches = await page.$$eval('details.call:not(.hidden)', (d) => d.filter((x) => x.open).length);
    out.count = await page.$eval('#count', (c) => c.textContent);
    out.diffLines = await page.$$eval('pre.diff .add, pre.diff .del', (d) => d.length);
    out.permissions = await page.$$eval('p.perm', (d) => d.map((p) => p.textContent));
    // The whole session in the screenshot: search cleared, every card open.
    await page.$eval('#q', (q) => { q.value = ''; q.dispatchEvent(new Event('input')); });
    await page.$$eval('details.call', (d) => d.forEach((x) => { x.open = true; }));
    await page.screenshot({ path: shot, fullPage: true });
    // Wait a moment for anything the page might still try to fetch.
    await new Promise((r) => setTimeout(r, 300));
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
  const ok = out.cards === Number(calls) && !out.openBefore && out.openAfter && out.bodyShown
    && out.shownAfterSearch > 0 && out.shownAfterSearch < out.entries
    && out.requests.length === 0 && out.errors.length === 0;
  process.exit(ok ? 0 : 1);
})().catch((e) => { console.error(e); process.exit(2); });
