// Opens the hub's approvals page with a pairing code in headless Chromium, as a phone
// would, and answers the one pending request: allows it, or, given a REASON, rejects it
// with that reason, written across one of the page's refreshes.
// Usage: node approvals_check.cjs CHROMIUM URL [REASON]
// Prints one JSON line of findings; exits 1 when a check fails.
const puppeteer = require('puppeteer-core');

(async () => {
  const [chromium, url, reason] = process.argv.slice(2);
  const origin = new URL(url).origin;
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'],
  });
  const out = { outside: [], errors: [], queries: [] };
  try {
    const page = await browser.newPage();
    await page.setRequestInterception(true);
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (u.origin !== origin) {
        out.outside.push(r.url());
        r.abort();
        return;
      }
      if (u.search) out.queries.push(r.url());
      r.continue();
    });
    page.on('pageerror', (e) => out.errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') out.errors.push(m.text()); });
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForSelector('li.request', { timeout: 15000 });
    out.addressAfterPairing = page.url();
    out.stored = await page.evaluate(() => (localStorage.getItem('trellis-token') || '').slice(0, 4));
    out.subject = await page.$eval('li.request .subject', (e) => e.textContent);
    out.where = await page.$eval('li.request .where', (e) => e.textContent);
    out.choices = await page.$$eval('li.request .choices button', (b) => b.map((x) => x.textContent));
    // Paired: the token form is gone from the screen (not only marked hidden).
    out.loginShown = await page.$eval('#login', (f) => getComputedStyle(f).display !== 'none');
    // Nobody approves blind: the diff's lines, the input, how long it has waited.
    out.diff = await page.$$eval('li.request pre.diff span', (s) => s.map((x) => [x.className, x.textContent.replace(/\n$/, '')]));
    out.input = await page.$eval('li.request details pre.input', (e) => e.textContent);
    out.waited = await page.$eval('li.request .waited', (e) => e.textContent);
    if (reason === undefined) {
      await page.click('li.request button[data-option="allow"]');
    } else {
      out.formShownFirst = await page.$eval('li.request form.reasonform', (f) => getComputedStyle(f).display !== 'none');
      await page.click('li.request button.reason');
      const half = Math.floor(reason.length / 2);
      await page.type('li.request form.reasonform input', reason.slice(0, half));
      // The page refreshes every 3 s: what is being written stays.
      await new Promise((r) => setTimeout(r, 3500));
      await page.type('li.request form.reasonform input', reason.slice(half));
      out.typed = await page.$eval('li.request form.reasonform input', (i) => i.value);
      await page.click('li.request form.reasonform button[type="submit"]');
    }
    await page.waitForFunction(() => {
      const s = document.querySelector('li.request .said');
      return s && s.textContent.length > 0;
    }, { timeout: 10000 });
    out.said = await page.$eval('li.request .said', (e) => e.textContent);
    // The answered request leaves the list at the next refresh.
    await page.waitForFunction(() => document.querySelectorAll('li.request').length === 0, { timeout: 15000 });
    out.status = await page.$eval('#status', (e) => e.textContent);
  } catch (e) {
    out.errors.push(String(e));
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
  process.exit(out.errors.length ? 1 : 0);
})();
