// Read patterns: the words, and what each of N readers loads of a model under each pattern.
// Every pattern but replicated delivers each tensor byte exactly once over all readers.
#include "loaders/use/part.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "loaders/format/checksum.h"
#include "loaders/format/model.h"
#include "tests/support/generated_model.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

ReadPattern Pattern(const std::string& text) {
  ReadPattern p;
  const Status s = ParsePattern(text, &p);
  EXPECT_TRUE(s.ok()) << s.message();
  return p;
}

// Every reader's part of `model` under `pattern`.
std::vector<TensorTable> Parts(const TensorTable& model, const std::string& pattern, int n) {
  std::vector<TensorTable> parts(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    const Status s = PartOf("m.wlf", model, Pattern(pattern), k, n, &parts[static_cast<size_t>(k)]);
    EXPECT_TRUE(s.ok()) << pattern << " reader " << k << ": " << s.message();
  }
  return parts;
}

// The error of splitting `model` by `pattern` among `n` readers (kBadInput expected).
std::string Refusal(const TensorTable& model, const std::string& pattern, int n) {
  const Status s = CheckSplit("m.wlf", model, Pattern(pattern), n);
  EXPECT_EQ(s.code(), Status::Code::kBadInput) << pattern << " among " << n;
  return s.message();
}

uint64_t Sum(const std::vector<TensorTable>& parts) {
  uint64_t bytes = 0;
  for (const TensorTable& p : parts) bytes += p.tensor_bytes;
  return bytes;
}

// The pieces of all parts cover every tensor byte of `model` exactly once: per file, sorted,
// they follow each other from each tensor's first byte to its last, and nothing is left over.
void ExpectTiles(const TensorTable& model, const std::vector<TensorTable>& parts) {
  using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;
  std::map<std::string, Ranges> tensors, pieces;
  for (const TensorInfo& t : model.tensors) {
    tensors[model.shards[t.shard].path].push_back({t.offset, t.offset + t.size});
  }
  for (const TensorTable& part : parts) {
    for (const TensorInfo& t : part.tensors) {
      pieces[part.shards[t.shard].path].push_back({t.offset, t.offset + t.size});
    }
  }
  EXPECT_EQ(pieces.size(), tensors.size());
  for (auto& [path, want] : tensors) {
    Ranges& got = pieces[path];
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    size_t i = 0;
    for (const auto& [begin, end] : want) {
      uint64_t at = begin;
      while (at < end && i < got.size() && got[i].first == at) at = got[i++].second;
      EXPECT_EQ(at, end) << path << ": the tensor at " << begin << " is not tiled";
    }
    EXPECT_EQ(i, got.size()) << path << ": pieces overlap or lie outside the tensors";
  }
}

// Each piece of `part` lies inside the model's tensor of its name.
void ExpectInside(const TensorTable& model, const TensorTable& part) {
  std::map<std::string, const TensorInfo*> by_name;
  for (const TensorInfo& t : model.tensors) by_name[t.name] = &t;
  for (const TensorInfo& p : part.tensors) {
    const TensorInfo* t = by_name.at(p.name);
    EXPECT_GE(p.offset, t->offset) << p.name;
    EXPECT_LE(p.offset + p.size, t->offset + t->size) << p.name;
    EXPECT_EQ(part.shards[p.shard].path, model.shards[t->shard].path) << p.name;
  }
}

// ---- hand-made tables ----

struct Spec {
  std::string name;
  std::vector<uint64_t> shape;
  uint32_t shard = 0;
  std::string dtype = "bf16";
  uint64_t size = 0;  // 0: 2 bytes per element
};

// Tensors one after the other from byte 64 of each shard's file ("s0.wlf", ...; shard k is
// 1000 * (k + 1) bytes), every file and the model with a stored checksum.
TensorTable Table(const std::vector<Spec>& specs) {
  TensorTable t;
  t.format = "wlf";
  t.expected_checksum = 42;
  for (const Spec& s : specs) {
    while (t.shards.size() <= s.shard) {
      ShardInfo sh;
      sh.path = fmt::format("s{}.wlf", t.shards.size());
      sh.file_size = 1000 * (t.shards.size() + 1);
      sh.data_offset = 64;
      sh.first_tensor = t.tensors.size();
      sh.expected_checksum = 7;
      t.file_size += sh.file_size;
      t.shards.push_back(sh);
    }
    ShardInfo& sh = t.shards[s.shard];
    TensorInfo info;
    info.name = s.name;
    info.dtype = s.dtype;
    info.shape = s.shape;
    info.size = s.size;
    if (info.size == 0) {
      info.size = 2;
      for (uint64_t d : s.shape) info.size *= d;
    }
    info.offset = sh.data_offset + sh.tensor_bytes;
    info.shard = s.shard;
    sh.tensor_bytes += info.size;
    sh.tensor_count += 1;
    t.tensor_bytes += info.size;
    t.tensors.push_back(info);
  }
  t.data_offset = 64;
  return t;
}

std::vector<std::string> Names(const TensorTable& t) {
  std::vector<std::string> names;
  for (const TensorInfo& i : t.tensors) names.push_back(i.name);
  return names;
}

// ---- a generated model ----

// A small llama WLF file (2 MiB, 20-odd layers), generated once in a temporary folder.
class PartTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<test::TempDir>();
    test::WriteModel({.path = path(), .seed = 3});
    model_ = std::make_unique<TensorTable>();
    const Status s = ReadModel(path(), model_.get());
    ASSERT_TRUE(s.ok()) << s.message();
  }
  static void TearDownTestSuite() {
    model_.reset();
    dir_.reset();  // removes the folder and the file
  }
  void SetUp() override { ASSERT_TRUE(model_) << "the model was not generated"; }

  static const TensorTable& model() { return *model_; }
  static std::string path() { return dir_->File("m.wlf"); }

  static std::unique_ptr<test::TempDir> dir_;
  static std::unique_ptr<TensorTable> model_;
};

std::unique_ptr<test::TempDir> PartTest::dir_;
std::unique_ptr<TensorTable> PartTest::model_;

// ---- ParsePattern ----

TEST(ReadPatternTest, ParsesEveryPatternAndWritesItBack) {
  struct Case {
    const char* text;
    ReadPattern::Kind kind;
    int dim;
    const char* back;
  };
  const Case cases[] = {
      {"replicated", ReadPattern::Kind::kReplicated, 0, "replicated"},
      {"tp", ReadPattern::Kind::kTp, 0, "tp"},
      {"tp:0", ReadPattern::Kind::kTp, 0, "tp"},
      {"tp:1", ReadPattern::Kind::kTp, 1, "tp:1"},
      {"pp", ReadPattern::Kind::kPp, 0, "pp"},
      {"files", ReadPattern::Kind::kFiles, 0, "files"},
  };
  for (const Case& c : cases) {
    ReadPattern p;
    const Status s = ParsePattern(c.text, &p);
    ASSERT_TRUE(s.ok()) << c.text << ": " << s.message();
    EXPECT_EQ(p.kind, c.kind) << c.text;
    EXPECT_EQ(p.dim, c.dim) << c.text;
    EXPECT_EQ(p.Text(), c.back) << c.text;
  }
}

TEST(ReadPatternTest, BadWordsAreRefusedWithTheListOfPatterns) {
  for (const char* word : {"", "TP", "tp:", "tp:x", "tp:-1", "tp1", "pipeline", "file"}) {
    ReadPattern p;
    const Status s = ParsePattern(word, &p);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << "'" << word << "'";
    EXPECT_TRUE(Has(s.message(), fmt::format("'{}'", word))) << s.message();
    EXPECT_TRUE(Has(s.message(), "replicated, tp, tp:DIM, pp, files")) << s.message();
  }
}

// ---- tp ----

TEST_F(PartTest, TpSlicesEveryTensorAlongItsFirstDimensionOnce) {
  for (int n : {2, 4}) {
    SCOPED_TRACE(fmt::format("{} readers", n));
    const std::vector<TensorTable> parts = Parts(model(), "tp", n);
    EXPECT_EQ(Sum(parts), model().tensor_bytes);
    for (const TensorTable& part : parts) {
      // One piece per tensor, in the model's order, a 1/n of its rows.
      ASSERT_EQ(Names(part), Names(model()));
      for (size_t i = 0; i < part.tensors.size(); ++i) {
        const TensorInfo& t = model().tensors[i];
        EXPECT_EQ(part.tensors[i].size * static_cast<uint64_t>(n), t.size) << t.name;
        EXPECT_EQ(part.tensors[i].shape[0] * static_cast<uint64_t>(n), t.shape[0]) << t.name;
      }
      ExpectInside(model(), part);
      ASSERT_EQ(part.shards.size(), 1u);
      EXPECT_EQ(part.shards[0].tensor_bytes, part.tensor_bytes);
      EXPECT_EQ(part.shards[0].tensor_count, part.tensors.size());
    }
    ExpectTiles(model(), parts);
  }
}

TEST_F(PartTest, TpAlongDimensionOneTakesAStridedPiecePerRow) {
  const std::vector<TensorTable> parts = Parts(model(), "tp:1", 2);
  EXPECT_EQ(Sum(parts), model().tensor_bytes);
  for (const TensorTable& part : parts) {
    std::map<std::string, uint64_t> pieces;
    for (const TensorInfo& p : part.tensors) ++pieces[p.name];
    for (const TensorInfo& t : model().tensors) {
      // A matrix: one piece per row; a vector: split along its only dimension, one piece.
      EXPECT_EQ(pieces[t.name], t.shape.size() == 2 ? t.shape[0] : 1u) << t.name;
    }
    ExpectInside(model(), part);
  }
  ExpectTiles(model(), parts);
}

TEST(PartOfTest, TpPiecesAreWhereTheSliceLies) {
  // bf16 [3, 4] at byte 64: rows of 8 bytes; reader 1 of 2 along dimension 1 takes the last
  // 2 elements (4 bytes) of each row. A vector [6] is split along its only dimension.
  const TensorTable model = Table({{"w", {3, 4}}, {"v", {6}}});
  TensorTable part;
  ASSERT_TRUE(PartOf("m.wlf", model, Pattern("tp:1"), 1, 2, &part).ok());
  ASSERT_EQ(part.tensors.size(), 4u);
  for (uint64_t row = 0; row < 3; ++row) {
    EXPECT_EQ(part.tensors[row].offset, 64 + row * 8 + 4);
    EXPECT_EQ(part.tensors[row].size, 4u);
    EXPECT_EQ(part.tensors[row].shape, (std::vector<uint64_t>{2}));
  }
  EXPECT_EQ(part.tensors[3].name, "v");
  EXPECT_EQ(part.tensors[3].offset, 64u + 24u + 6u);
  EXPECT_EQ(part.tensors[3].size, 6u);
  EXPECT_EQ(part.tensor_bytes, 18u);

  ASSERT_TRUE(PartOf("m.wlf", model, Pattern("tp"), 1, 3, &part).ok());
  ASSERT_EQ(part.tensors.size(), 2u);
  EXPECT_EQ(part.tensors[0].offset, 64u + 8u);  // row 1 of 3
  EXPECT_EQ(part.tensors[0].shape, (std::vector<uint64_t>{1, 4}));
  EXPECT_EQ(part.tensors[1].offset, 64u + 24u + 4u);
}

TEST(PartOfTest, TpRefusesWhatItCannotSlice) {
  const TensorTable uneven = Table({{"emb", {8, 4}}, {"blk.0.attn_q.weight", {6, 4}}});
  std::string m = Refusal(uneven, "tp", 4);
  EXPECT_TRUE(Has(m, "m.wlf")) << m;
  EXPECT_TRUE(Has(m, "'blk.0.attn_q.weight'")) << m;
  EXPECT_TRUE(Has(m, "4 readers")) << m;
  EXPECT_TRUE(Has(m, "dimension 0 is 6, not a multiple of 4")) << m;
  EXPECT_TRUE(CheckSplit("m.wlf", uneven, Pattern("tp"), 2).ok());
  m = Refusal(Table({{"w", {4, 6}}}), "tp:1", 4);
  EXPECT_TRUE(Has(m, "dimension 1 is 6, not a multiple of 4")) << m;

  m = Refusal(Table({{"w", {4}}, {"scale", {}}}), "tp", 2);
  EXPECT_TRUE(Has(m, "'scale'")) << m;
  EXPECT_TRUE(Has(m, "scalar")) << m;

  // q4_0: blocks of 32 elements in 18 bytes. Whole rows can be sliced, a row cannot.
  const TensorTable quantized = Table({{"q", {4, 64}, 0, "q4_0", 4 * 36}});
  EXPECT_TRUE(CheckSplit("m.wlf", quantized, Pattern("tp"), 2).ok());
  m = Refusal(quantized, "tp:1", 2);
  EXPECT_TRUE(Has(m, "'q' (q4_0)")) << m;
  EXPECT_TRUE(Has(m, "stored in blocks")) << m;
  m = Refusal(Table({{"q", {64}, 0, "q4_0", 36}}), "tp", 2);
  EXPECT_TRUE(Has(m, "its 36 bytes are stored in blocks")) << m;
}

// ---- pp ----

TEST(PartOfTest, PpGivesEachReaderAContiguousRangeOfLayers) {
  const TensorTable model = Table({{"token_embd.weight", {16, 4}},
                                   {"blk.0.attn_q.weight", {4, 4}},
                                   {"blk.0.ffn_norm.weight", {4}},
                                   {"blk.1.attn_q.weight", {4, 4}},
                                   {"blk.2.attn_q.weight", {4, 4}},
                                   {"blk.3.attn_q.weight", {4, 4}},
                                   {"output_norm.weight", {4}},
                                   {"output.weight", {16, 4}}});
  std::vector<TensorTable> parts = Parts(model, "pp", 2);
  EXPECT_EQ(Names(parts[0]),
            (std::vector<std::string>{"token_embd.weight", "blk.0.attn_q.weight",
                                      "blk.0.ffn_norm.weight", "blk.1.attn_q.weight"}));
  EXPECT_EQ(Names(parts[1]), (std::vector<std::string>{"blk.2.attn_q.weight", "blk.3.attn_q.weight",
                                                       "output_norm.weight", "output.weight"}));
  EXPECT_EQ(Sum(parts), model.tensor_bytes);
  ExpectTiles(model, parts);

  parts = Parts(model, "pp", 4);
  EXPECT_EQ(Names(parts[0]).front(), "token_embd.weight");
  EXPECT_EQ(Names(parts[1]), (std::vector<std::string>{"blk.1.attn_q.weight"}));
  EXPECT_EQ(Names(parts[2]), (std::vector<std::string>{"blk.2.attn_q.weight"}));
  EXPECT_EQ(Names(parts[3]).back(), "output.weight");

  const std::string m = Refusal(model, "pp", 5);
  EXPECT_TRUE(Has(m, "among 5 readers")) << m;
  EXPECT_TRUE(Has(m, "it has 4 layers")) << m;
}

TEST_F(PartTest, PpDeliversEveryTensorOnce) {
  const std::vector<TensorTable> parts = Parts(model(), "pp", 3);
  EXPECT_EQ(Sum(parts), model().tensor_bytes);
  for (const TensorTable& part : parts) EXPECT_FALSE(part.tensors.empty());
  EXPECT_EQ(parts[0].tensors.front().name, "token_embd.weight");
  EXPECT_EQ(parts[2].tensors.back().name, "output.weight");
  ExpectTiles(model(), parts);
}

// ---- files ----

TEST(PartOfTest, FilesGivesEachReaderItsShardsRenumbered) {
  const TensorTable model =
      Table({{"a", {4}, 0}, {"b", {8}, 0}, {"c", {4}, 1}, {"d", {2}, 2}, {"e", {6}, 2}});
  const std::vector<TensorTable> parts = Parts(model, "files", 2);
  EXPECT_EQ(Sum(parts), model.tensor_bytes);
  ExpectTiles(model, parts);

  const TensorTable& first = parts[0];
  EXPECT_EQ(Names(first), (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(first.shards.size(), 1u);
  EXPECT_EQ(first.shards[0].path, "s0.wlf");
  EXPECT_EQ(first.file_size, 1000u);

  const TensorTable& second = parts[1];
  EXPECT_EQ(Names(second), (std::vector<std::string>{"c", "d", "e"}));
  ASSERT_EQ(second.shards.size(), 2u);
  EXPECT_EQ(second.shards[0].path, "s1.wlf");
  EXPECT_EQ(second.shards[1].path, "s2.wlf");
  EXPECT_EQ(second.file_size, 2000u + 3000u);
  EXPECT_EQ(second.tensor_bytes, 8u + 16u);
  EXPECT_EQ(second.tensors[0].shard, 0u);
  EXPECT_EQ(second.tensors[2].shard, 1u);
  EXPECT_EQ(second.shards[0].first_tensor, 0u);
  EXPECT_EQ(second.shards[0].tensor_count, 1u);
  EXPECT_EQ(second.shards[0].tensor_bytes, 8u);
  EXPECT_EQ(second.shards[1].first_tensor, 1u);
  EXPECT_EQ(second.shards[1].tensor_count, 2u);
  EXPECT_EQ(second.shards[1].tensor_bytes, 16u);

  for (const TensorTable& part : parts) {
    EXPECT_FALSE(part.expected_checksum.has_value());
    for (const ShardInfo& s : part.shards) EXPECT_FALSE(s.expected_checksum.has_value()) << s.path;
  }

  const std::string m = Refusal(model, "files", 4);
  EXPECT_TRUE(Has(m, "among 4 readers")) << m;
  EXPECT_TRUE(Has(m, "it has 3 files")) << m;
  const std::string one = Refusal(Table({{"a", {4}}}), "files", 2);
  EXPECT_TRUE(one.ends_with("it has 1 file")) << one;
}

// ---- replicated ----

TEST_F(PartTest, ReplicatedReadersEachLoadTheWholeModel) {
  for (const TensorTable& part : Parts(model(), "replicated", 3)) {
    ASSERT_EQ(part.tensors.size(), model().tensors.size());
    for (size_t i = 0; i < part.tensors.size(); ++i) {
      const TensorInfo &a = part.tensors[i], &b = model().tensors[i];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.shape, b.shape);
      EXPECT_EQ(a.offset, b.offset);
      EXPECT_EQ(a.size, b.size);
    }
    EXPECT_EQ(part.tensor_bytes, model().tensor_bytes);
    EXPECT_EQ(part.file_size, model().file_size);
  }
}

}  // namespace
}  // namespace loadbench
