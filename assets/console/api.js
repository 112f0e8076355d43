// The console's one way to the service: the documented /v1 API, with the key the person signed in
// with, held only by this tab (sessionStorage: never a URL, a cookie or localStorage), and every
// answer that is not a 200 turned into words.

const STORE = 'storefront-console-key';
let key = sessionStorage.getItem(STORE);

export const signedIn = () => key !== null;

export function remember(newKey) {
  key = newKey;
  sessionStorage.setItem(STORE, newKey);
}

export function forget() {
  key = null;
  sessionStorage.removeItem(STORE);
}

// What a 401 means, wherever the console says it.
export const UNKNOWN_KEY = 'This API key is unknown or was revoked.';

export class ApiError extends Error {
  constructor(status, body, retryAfter, requestId) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.body = body;
    this.retryAfter = retryAfter;
    this.requestId = requestId;
  }

  get code() { return this.body ? this.body.code : null; }
  get field() { return this.body && this.body.details ? this.body.details.field : null; }
}

// POST `path` with `body`; the answer's JSON, or an ApiError.
export async function call(path, body = {}, { signal, presented } = {}) {
  let response;
  try {
    response = await fetch(path, {
      method: 'POST',
      headers: { authorization: `Bearer ${presented || key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
      signal,
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, null, null, null);
  }
  if (response.ok) return response.json();
  let data = null;
  try { data = await response.json(); } catch { /* not JSON: said by its status */ }
  throw new ApiError(response.status, data, response.headers.get('retry-after'), response.headers.get('x-request-id'));
}

// What went wrong, in words a person acts on.
export function inWords(error) {
  if (!(error instanceof ApiError)) return `The page failed: ${error && error.message ? error.message : error}.`;
  const id = (error.body && error.body.details && error.body.details.request_id) || error.requestId;
  switch (error.status) {
    case 0: return 'The service could not be reached. Check the connection and try again.';
    case 401: return `${UNKNOWN_KEY} Sign out and sign in with a valid key.`;
    case 403: return 'This key may not do that: a storefront key can only search locations and list categories.';
    case 408: return 'The request took too long to arrive. Try again.';
    case 429: {
      const secs = Math.max(1, Number(error.retryAfter) || 1);
      return `Too many requests for this merchant right now. Try again in ${secs} second${secs === 1 ? '' : 's'}.`;
    }
    case 503:
      return `The service could not tell whether this was stored (request id ${id}). Check before trying again.`;
    default:
      if (error.status >= 500) {
        return `The service failed and stored nothing (request id ${id}). Try again; if it happens again, quote the request id.`;
      }
      return error.field ? `${error.message} (field: ${error.field}).` : `${error.message}.`;
  }
}
