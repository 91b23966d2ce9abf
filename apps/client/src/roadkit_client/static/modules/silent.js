/**
 * The hidden frame of the silent session check. It loads the authorization URL
 * (with `prompt=none`) and waits for `silent-check.html` to post its query
 * parameters back. A message is accepted only when it comes from this origin,
 * from THIS frame, and carries the state we sent. The frame and the listener are
 * removed on every path: answer, timeout or error.
 */

/**
 * @param {{url: string, state: string, timeoutMs: number, env: object}} p
 * @returns {Promise<{params?: object, timedOut?: boolean}>}
 */
export function runSilentFrame({ url, state, timeoutMs, env }) {
  const { document, window } = env;
  const origin = env.location.origin;
  return new Promise((resolve) => {
    const frame = document.createElement('iframe');
    frame.setAttribute('data-roadkit-silent-check', '');
    frame.setAttribute('title', 'session check');
    frame.setAttribute('aria-hidden', 'true');
    frame.style.display = 'none';
    let timer = null;
    let done = false;

    const finish = (result) => {
      if (done) return;
      done = true;
      window.removeEventListener('message', onMessage);
      if (timer !== null) env.clearTimeout(timer);
      frame.remove();
      resolve(result);
    };

    function onMessage(event) {
      if (event.origin !== origin) return;
      if (event.source !== frame.contentWindow) return;
      const data = event.data;
      if (!data || typeof data !== 'object' || data.state !== state) return;
      finish({ params: data });
    }

    window.addEventListener('message', onMessage);
    timer = env.setTimeout(() => finish({ timedOut: true }), timeoutMs);
    try {
      frame.src = url;
      document.body.appendChild(frame);
    } catch (err) {
      finish({ params: { error: 'frame_error', error_description: String(err?.message ?? err) } });
    }
  });
}
