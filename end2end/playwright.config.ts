import { defineConfig } from '@playwright/test';
import * as os from 'os';
import * as fs from 'fs';
import * as path from 'path';

// Chromium writes its profile and caches here, never under ~/.config.
const chromeHome = fs.mkdtempSync(path.join(os.tmpdir(), 'kennel-e2e-chromium-'));

export default defineConfig({
  testDir: './tests',
  timeout: 60_000,
  workers: 1,
  fullyParallel: false,
  reporter: [['list']],
  use: {
    baseURL: 'http://127.0.0.1:4600',
    viewport: { width: 1280, height: 860 },
    launchOptions: {
      executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
             '--disable-component-update', '--disable-sync', '--no-first-run'],
      env: { ...process.env, XDG_CONFIG_HOME: chromeHome, XDG_CACHE_HOME: chromeHome },
    },
  },
  webServer: {
    command: 'bash ./serve.sh',
    url: 'http://127.0.0.1:4600/healthz',
    timeout: 30_000,
    reuseExistingServer: false,
    stdout: 'ignore',
    stderr: 'pipe',
  },
});
