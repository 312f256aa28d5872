// Opens the hub's approvals page with a pairing code in headless Chromium and rejects
// the one pending request with a reason, written across one of the page's refreshes.
// Usage: node approvals_reason_check.cjs CHROMIUM URL REASON
// Prints one JSON line of findings; exits 1 when a check fails.
const puppeteer = require('puppeteer-core');

(async () => {
  const [chromium, url, reason] = process.argv.slice(2);
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'],
  });
  const out = { errors: [] };
  try {
    const page = await browser.newPage();
    page.on('pageerror', (e) => out.errors.push(String(e)));
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForSelector('li.request button.reason', { timeout: 15000 });
    out.formShownFirst = await page.$eval('li.request form.reasonform', (f) => getComputedStyle(f).display !== 'none');
    await page.click('li.request button.reason');
    const half = Math.floor(reason.length / 2);
    await page.type('li.request form.reasonform input', reason.slice(0, half));
    // The page refreshes every 3 s: what is being written stays.
    await new Promise((r) => setTimeout(r, 3500));
    await page.type('li.request form.reasonform input', reason.slice(half));
    out.typed = await page.$eval('li.request form.reasonform input', (i) => i.value);
    await page.click('li.request form.reasonform button[type="submit"]');
    await page.waitForFunction(() => {
      const s = document.querySelector('li.request .said');
      return s && s.textContent.length > 0;
    }, { timeout: 10000 });
    out.said = await page.$eval('li.request .said', (e) => e.textContent);
    await page.waitForFunction(() => document.querySelectorAll('li.request').length === 0, { timeout: 15000 });
  } catch (e) {
    out.errors.push(String(e));
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
  process.exit(out.errors.length ? 1 : 0);
})();
