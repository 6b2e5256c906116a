// jsonMember on rapidjson's SAX reader. The reader validates the text and reports each token
// to JsonMemberFinder, which follows the nesting depth and takes the member's span from the
// stream's offsets; it stops the reader at the end of the member it looks for.
#include "minicluster/json_scan.h"

#include <rapidjson/allocators.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <cstddef>

namespace strait::minicluster {

namespace {

// The reader's flags. Iterative: the nesting lives on the reader's own stack, not the call
// stack, so deep nesting cannot overflow it. Numbers as strings: a number is checked for its
// syntax but not converted, as only its span is wanted.
constexpr unsigned kJsonMemberParseFlags =
    rapidjson::kParseIterativeFlag | rapidjson::kParseNumbersAsStringsFlag;

// Receives the reader's events for one document. In the iterative mode the reader reports
// StartObject/StartArray and EndObject/EndArray before it takes the bracket, every other
// event after it took the last character of its token: the stream's offset then gives where
// a member's value ends. Returning false stops the reader.
class JsonMemberFinder : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, JsonMemberFinder> {
 public:
  JsonMemberFinder(std::string_view text, std::string_view key, const rapidjson::MemoryStream& in)
      : text_(text), key_(key), in_(in) {}

  bool StartObject() {
    if (depth_ == 0) next_ = in_.Tell() + 1;  // just past the top-level '{'
    ++depth_;
    return true;
  }
  // An array at depth 0 is a text that is not an object.
  bool StartArray() { return depth_++ > 0; }
  bool EndObject(rapidjson::SizeType) { return close(); }
  bool EndArray(rapidjson::SizeType) { return close(); }

  bool Key(const char*, rapidjson::SizeType, bool) {
    if (depth_ != 1) return true;
    // The reader has taken the key up to its closing quote. Only whitespace and a comma lie
    // between the end of the previous member (or the '{') and its opening quote; the
    // comparison is with the key as written, escapes included.
    const size_t end = in_.Tell();
    const size_t begin = text_.find('"', next_);
    matched_ = text_.substr(begin + 1, end - begin - 2) == key_;
    keyEnd_ = end;
    return true;
  }

  // A scalar: null, true, false, a number or a string that is not a key.
  bool Default() {
    if (depth_ == 0) return false;  // the text is not an object
    return depth_ == 1 ? memberEnd(in_.Tell()) : true;
  }

  const std::optional<std::string_view>& found() const { return found_; }

 private:
  // The reader is at the closing bracket of an object or array.
  bool close() {
    if (--depth_ == 0) return false;  // the top-level object ended without the member
    return depth_ == 1 ? memberEnd(in_.Tell() + 1) : true;
  }

  // The value of the current member of the top-level object ends just before `end`.
  bool memberEnd(size_t end) {
    if (!matched_) {
      next_ = end;
      return true;
    }
    // Validated by the reader: whitespace, the ':' and whitespace lie between key and value.
    const size_t colon = text_.find(':', keyEnd_);
    const size_t begin = text_.find_first_not_of(" \t\n\r", colon + 1);
    found_ = text_.substr(begin, end - begin);
    return false;
  }

  std::string_view text_;
  std::string_view key_;
  const rapidjson::MemoryStream& in_;
  int depth_ = 0;
  size_t next_ = 0;    // where the next member of the top-level object starts, at the latest
  size_t keyEnd_ = 0;  // just past the current top-level key's closing quote
  bool matched_ = false;
  std::optional<std::string_view> found_;
};

}  // namespace

std::optional<std::string_view> jsonMember(std::string_view text, std::string_view key) {
  // MemoryStream reads exactly `text`: past its end it yields '\0', which the reader takes for
  // the end of the input (unlike StringStream, which would read up to a NUL).
  rapidjson::MemoryStream in(text.data(), text.size());
  JsonMemberFinder finder(text, key, in);
  // The reader's stack (nesting states, the string being decoded) starts in this buffer and
  // takes heap memory only for longer strings or deeper nesting.
  alignas(std::max_align_t) char buffer[2048];
  rapidjson::MemoryPoolAllocator<> pool(buffer, sizeof buffer);
  rapidjson::GenericReader<rapidjson::UTF8<>, rapidjson::UTF8<>, rapidjson::MemoryPoolAllocator<>>
      reader(&pool, 1024);
  // A parse error (malformed text, or the finder's stop) leaves found() as it was: the member's
  // span once its value was read whole, otherwise nullopt.
  reader.Parse<kJsonMemberParseFlags>(in, finder);
  return finder.found();
}

}  // namespace strait::minicluster
