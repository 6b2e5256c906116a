#include "minicluster/store.h"

namespace strait::minicluster {

const char* eventTypeName(EventType t) {
  switch (t) {
    case EventType::Added: return "ADDED";
    case EventType::Modified: return "MODIFIED";
    case EventType::Deleted: return "DELETED";
    case EventType::Bookmark: return "BOOKMARK";
  }
  return "ERROR";
}

}  // namespace strait::minicluster
