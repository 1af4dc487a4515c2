#pragma once
// Matches as the keys that CemdPieceMatcher::keys() gives for them, and keys compared.

#include <vector>

#include "kbench/cemd.hpp"

namespace kbench {

inline bool operator==(const Top2& a, const Top2& b) {
  return a.best == b.best && a.second == b.second;
}

namespace testing {

inline std::vector<Top2> keys_of(const std::vector<CemdMatch>& matches) {
  std::vector<Top2> keys;
  for (const CemdMatch& m : matches) {
    keys.push_back(top2_of(0, m.index, m.distance, m.second_index, m.second_distance));
  }
  return keys;
}

}  // namespace testing
}  // namespace kbench
