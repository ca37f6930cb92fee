// The login puzzle (config/login.py): from an address that sent many failed logins, a fresh
// browser's attempt carries a number n such that SHA-256("<nonce>:<n>") starts with the
// asked number of zero bits. Solved here while the user types (about a second), in slices so
// the page stays responsive; the form waits for it if submitted sooner. Plain SHA-256 of one
// block: crypto.subtle exists only in secure contexts, and the quickstart runs on plain http.
(() => {
  const form = document.querySelector("form[data-puzzle-nonce]");
  if (!form) return;
  const K = new Uint32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
  ]);
  const H0 = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
  const W = new Uint32Array(64);
  const rotr = (x, n) => (x >>> n) | (x << (32 - n));

  // SHA-256 of an ASCII string shorter than 56 bytes (one block): the eight state words.
  function sha256(text) {
    W.fill(0);
    for (let i = 0; i < text.length; i++) W[i >> 2] |= text.charCodeAt(i) << (24 - 8 * (i & 3));
    W[text.length >> 2] |= 0x80 << (24 - 8 * (text.length & 3));
    W[15] = text.length * 8;
    for (let i = 16; i < 64; i++) {
      const s0 = rotr(W[i - 15], 7) ^ rotr(W[i - 15], 18) ^ (W[i - 15] >>> 3);
      const s1 = rotr(W[i - 2], 17) ^ rotr(W[i - 2], 19) ^ (W[i - 2] >>> 10);
      W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
    }
    let [a, b, c, d, e, f, g, h] = H0;
    for (let i = 0; i < 64; i++) {
      const t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    return [a, b, c, d, e, f, g, h].map((x, i) => (x + H0[i]) >>> 0);
  }

  function zeroBits(words) {
    let bits = 0;
    for (const w of words) {
      if (w === 0) { bits += 32; continue; }
      return bits + Math.clz32(w);
    }
    return bits;
  }

  const nonce = form.dataset.puzzleNonce;
  const bits = Number(form.dataset.puzzleBits);
  const answer = form.querySelector("input[name=puzzle_answer]");
  const status = document.getElementById("puzzle-status");
  let solved = false;
  let waiting = false;
  let n = 0;
  const started = performance.now();
  function slice() {
    for (const end = n + 20000; n < end; n++) {
      if (zeroBits(sha256(`${nonce}:${n}`)) >= bits) {
        answer.value = String(n);
        solved = true;
        status.textContent = `Check done in ${((performance.now() - started) / 1000).toFixed(1)} s.`;
        form.dataset.puzzleSolved = "1";
        if (waiting) form.submit();
        return;
      }
    }
    setTimeout(slice, 0);
  }
  form.addEventListener("submit", (event) => {
    if (solved) return;
    event.preventDefault();
    waiting = true;
    status.textContent = "Finishing the check; logging in as soon as it is done…";
  });
  slice();
})();
