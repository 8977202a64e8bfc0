import { invalid } from '../errors.js';
import { type StatsWindow, statsWindow } from '../../domain/stats-window.js';

/** The window a stats query asks for (the endpoint's and the application's stats, API and portal), or a 400. */
export function windowOf(query: { since?: string; until?: string }, now: number): StatsWindow {
  const window = statsWindow(query, now);
  if (typeof window === 'string') throw invalid(window);
  return window;
}
