// What the specs after dashboard.spec.ts share: signing in as its operator (or setting one up
// when a spec runs alone).
import { expect, Page } from '@playwright/test';

export async function signIn(page: Page) {
  await page.goto('/');
  if (page.url().endsWith('/setup')) {
    await page.getByLabel('Name').fill('ada');
    await page.getByLabel('Password', { exact: true }).fill('correct horse battery');
    await page.getByLabel('The password again').fill('correct horse battery');
    await page.getByRole('button', { name: 'Create operator' }).click();
  } else if (page.url().includes('/login')) {
    await page.getByLabel('Name').fill('ada');
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Sign in' }).click();
  }
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
}
