#pragma once
// The packed SAD arithmetic that the layers' fast sad kernels share: four byte differences per
// 32-bit word (one PTX vabsdiff4 on CUDA devices, psadbw on x86 hosts, plain C++ elsewhere and
// with Isa::plain), rows packed into words, and the register-blocked SAD of one query row.

#include <cstdint>
#include <type_traits>
#include <vector>

#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
#include <emmintrin.h>
#endif

#include "kbench/host_device.hpp"
#include "kbench/image.hpp"
#include "kbench/isa.hpp"

namespace kbench {

// acc + Σ |a_b − b_b| over the four bytes of a and b: one packed instruction where the machine
// has one — PTX vabsdiff4 with its accumulating add on CUDA devices (__vsadu4 + acc does not
// fuse), psadbw on x86 hosts — and four byte differences elsewhere and with Isa::plain.
template <Isa kIsa = Isa::tuned>
KBENCH_HOST_DEVICE std::uint32_t sad4(std::uint32_t a, std::uint32_t b, std::uint32_t acc) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned) {
    std::uint32_t sum;
    asm("vabsdiff4.u32.u32.u32.add %0, %1, %2, %3;" : "=r"(sum) : "r"(a), "r"(b), "r"(acc));
    return sum;
  }
#elif defined(__SSE2__)
  if constexpr (kIsa == Isa::tuned) {
    const __m128i sad = _mm_sad_epu8(_mm_cvtsi32_si128(int(a)), _mm_cvtsi32_si128(int(b)));
    return acc + std::uint32_t(_mm_cvtsi128_si32(sad));
  }
#endif
  std::uint32_t sum = acc;
  for (int shift = 0; shift < 32; shift += 8) {
    const int d = int((a >> shift) & 0xFFu) - int((b >> shift) & 0xFFu);
    sum += std::uint32_t(d < 0 ? -d : d);
  }
  return sum;
}

// Bytes kShift .. kShift + 3 of the little-endian pair (hi:lo), as one word.
template <int kShift>
KBENCH_HOST_DEVICE std::uint32_t byte_window(std::uint32_t lo, std::uint32_t hi) {
  if constexpr (kShift == 0) {
    return lo;
  } else {
    return (lo >> (8 * kShift)) | (hi << (32 - 8 * kShift));
  }
}

// Rows of bytes as little-endian 32-bit words: row y's bytes 4w .. 4w + 3 form word
// y · pitch_words + w; bytes past the row's width are zero.
std::vector<std::uint32_t> pack_rows(const ImageU8& image, int pitch_words, int rows);
KBENCH_HOST_DEVICE int words_for(int bytes) {
  return (bytes + 3) / 4;
}
// The real bytes of the last packed word of a row `bytes` wide (all four when bytes % 4 == 0):
// the others, zero in the query, are masked off the target words they meet.
KBENCH_HOST_DEVICE std::uint32_t last_word_mask(int bytes) {
  return bytes % 4 ? (1u << (8 * (bytes % 4))) - 1u : ~0u;
}

namespace detail {
// acc[4p + h] += SAD of query word q against window word (u + p) at byte offset h, with the
// query's missing bytes masked off the target.
template <int kWords, Isa kIsa>
KBENCH_HOST_DEVICE void add_query_word(const std::uint32_t (&window)[4][kWords], int u,
                                       std::uint32_t q, std::uint32_t mask,
                                       std::uint32_t (&acc)[4 * kWords]) {
  KBENCH_UNROLL
  for (int p = 0; p < kWords; ++p) {
    const int at = (u + p) % kWords;
    KBENCH_UNROLL
    for (int h = 0; h < 4; ++h) {
      acc[4 * p + h] = sad4<kIsa>(window[h][at] & mask, q, acc[4 * p + h]);
    }
  }
}
}  // namespace detail

// Adds to acc[s], s < 4·kWords, the SAD of one query row at the 4·kWords neighbouring
// positions s of one target row: acc[s] += Σ_l |T(s + l) − Q(l)|, l < query_width, where T(x) is
// the row's byte x counted from the target words' origin. `target.load(x, words)` fills
// words[0 .. kWords) with target words x .. x + kWords − 1 (x a multiple of kWords; words up to
// ⌈⌈query_width/4⌉/kWords⌉·kWords + kWords − 1 are read); `query(w)` is query word w (bytes past
// query_width zero).
//
// Register blocking: a target word, shifted to the four byte offsets, serves 4·kWords
// accumulators; the shifted words live in a circular window of kWords slots whose slot indices
// are compile-time constants once the inner loops unroll, so the window never moves. The SADs go
// through sad4<kIsa>.
template <int kWords, Isa kIsa = Isa::tuned, class Target, class Query>
KBENCH_HOST_DEVICE void accumulate_sad_row(const Target& target, const Query& query,
                                           int query_width, std::uint32_t (&acc)[4 * kWords]) {
  const int full_words = query_width / 4;
  const int words = words_for(query_width);
  // Only the query's last word may be partial; its missing bytes are masked off the target.
  const std::uint32_t tail_mask = last_word_mask(query_width);
  std::uint32_t raw[kWords];
  std::uint32_t window[4][kWords];  // window[h][x % kWords]: target bytes 4x + h .. 4x + h + 3
  const auto enter = [&](int slot, std::uint32_t lo, std::uint32_t hi) {
    window[0][slot] = byte_window<0>(lo, hi);
    window[1][slot] = byte_window<1>(lo, hi);
    window[2][slot] = byte_window<2>(lo, hi);
    window[3][slot] = byte_window<3>(lo, hi);
  };
  target.load(0, raw);
  KBENCH_UNROLL
  for (int x = 0; x + 1 < kWords; ++x) enter(x, raw[x], raw[x + 1]);
  std::uint32_t previous = raw[kWords - 1];
  // Query words w0 .. w0 + kWords − 1 (those below `words`): word w needs target words
  // w .. w + kWords − 1, so word w + kWords − 1 enters the window in the slot word w − 1 leaves.
  // `checked` is false for chunks of whole words only, which then need no per-word tests.
  const auto chunk = [&](int w0, auto checked) {
    target.load(w0 + kWords, raw);
    KBENCH_UNROLL
    for (int u = 0; u < kWords; ++u) {
      enter((u + kWords - 1) % kWords, previous, raw[u]);
      previous = raw[u];
      const int w = w0 + u;
      if (!decltype(checked)::value || w < full_words) {
        detail::add_query_word<kWords, kIsa>(window, u, query(w), ~0u, acc);
      } else if (w < words) {
        detail::add_query_word<kWords, kIsa>(window, u, query(w), tail_mask, acc);
      }
    }
  };
  int w0 = 0;
  for (; w0 + kWords <= full_words; w0 += kWords) chunk(w0, std::false_type());
  for (; w0 < words; w0 += kWords) chunk(w0, std::true_type());
}

}  // namespace kbench
