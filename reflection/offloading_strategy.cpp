// Pod offloading strategies (see offloading_strategy.h).
#include "reflection/offloading_strategy.h"

#include <string>

namespace strait::reflection {

kube::Result<PodOffloadingStrategy> parsePodOffloadingStrategy(std::string_view text) {
  if (text.empty() || text == "LocalAndRemote") return PodOffloadingStrategy::LocalAndRemote;
  if (text == "Remote") return PodOffloadingStrategy::Remote;
  if (text == "Local") return PodOffloadingStrategy::Local;
  return kube::makeError(kube::Code::Invalid, "unknown pod offloading strategy \"" +
                                                  std::string(text) +
                                                  "\": expected LocalAndRemote, Remote or Local");
}

const char* podOffloadingStrategyName(PodOffloadingStrategy s) {
  switch (s) {
    case PodOffloadingStrategy::LocalAndRemote:
      return "LocalAndRemote";
    case PodOffloadingStrategy::Remote:
      return "Remote";
    case PodOffloadingStrategy::Local:
      return "Local";
  }
  return "LocalAndRemote";
}

}  // namespace strait::reflection
