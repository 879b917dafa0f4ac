#include <string>

#include "meta/meta_store.h"

namespace shale::meta {

// etcd's rule: increment the last byte that is not 0xff and drop what follows; a prefix of only
// 0xff bytes (or the empty prefix) has no upper bound, which etcd spells "\0".
std::string prefix_end(std::string_view p) {
  std::string end(p);
  while (!end.empty()) {
    auto& c = reinterpret_cast<unsigned char&>(end.back());
    if (c < 0xff) {
      ++c;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

}  // namespace shale::meta
