import type { Transport } from './transport.js';
import type { ListPage } from './types.js';

/**
 * A list operation: `for await` walks every item, following `next_cursor` from page to page; `page()`
 * fetches one page (the one `cursor` names, or the first) for paging by hand.
 */
export class List<T> implements AsyncIterable<T> {
  constructor(
    private readonly fetchPage: (cursor: string | undefined) => Promise<ListPage<T>>,
    private readonly cursor?: string,
  ) {}

  page(): Promise<ListPage<T>> {
    return this.fetchPage(this.cursor);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let cursor = this.cursor;
    for (;;) {
      const page = await this.fetchPage(cursor);
      yield* page.data;
      if (!page.has_more || page.next_cursor === null) return;
      // A cursor that does not move would loop for ever.
      if (page.next_cursor === cursor) throw new Error(`list cursor ${cursor} did not advance`);
      cursor = page.next_cursor;
    }
  }
}

/** The List of a GET route that pages with `cursor`, for the given filters and page size. */
export function listOf<T>(http: Transport, path: string, params: { cursor?: string | undefined }): List<T> {
  const { cursor, ...query } = params;
  return new List(
    (next) => http.request<ListPage<T>>({ method: 'GET', path, query: { ...query, cursor: next }, retry: 'safe' }),
    cursor,
  );
}
