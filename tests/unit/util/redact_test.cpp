// util::Redactor: a secret an upstream echoes is masked whole, as a fragment
// of 8 or more of its characters, and as a gateway's hint of its last 4
// after a recognisable prefix; ordinary words and short or unrelated text
// are left alone.
#include "util/redact.hpp"

#include <gtest/gtest.h>

#include <string>

namespace lse::util {
namespace {

const std::string kKey = "sk-test-0123456789abcdefSECRET";
const std::string kMask(Redactor::kMask);

TEST(Redactor, MasksEveryOccurrenceOfTheWholeSecret) {
  const Redactor r({kKey});
  EXPECT_EQ(r.mask("Incorrect API key provided: " + kKey + ". Again: " + kKey),
            "Incorrect API key provided: " + kMask + ". Again: " + kMask);
  EXPECT_EQ(r.mask(kKey), kMask);
  EXPECT_EQ(r.mask("{\"error\":\"bad key " + kKey + "\"}"),
            "{\"error\":\"bad key " + kMask + "\"}");
}

TEST(Redactor, MasksFragmentsOfEightOrMoreCharacters) {
  const Redactor r({kKey});
  // The last 8, the first 10, a middle run: each a substring of the key.
  EXPECT_EQ(r.mask("key ending in cdefSECRET was revoked"),
            "key ending in " + kMask + " was revoked");
  EXPECT_EQ(r.mask("prefix sk-test-01 seen"), "prefix " + kMask + " seen");
  EXPECT_EQ(r.mask("x=456789abcd;"), "x=" + kMask + ";");
  // 7 characters of it are not enough to say it is the key.
  EXPECT_EQ(r.mask("build 0123456 ok"), "build 0123456 ok");
}

TEST(Redactor, MasksAGatewaysHintOfTheLastFourAfterARecognisablePrefix) {
  const Redactor r({kKey});
  EXPECT_EQ(r.mask("Incorrect API key provided: sk-****CRET."),
            "Incorrect API key provided: " + kMask + ".");
  EXPECT_EQ(r.mask("key sk-test-01...CRET is invalid"), "key " + kMask + " is invalid");
  EXPECT_EQ(r.mask("sk-ant-api03-...CRET"), kMask);
  EXPECT_EQ(r.mask("got ****************CRET"), "got " + kMask);
  EXPECT_EQ(r.mask("got \xE2\x80\xA6"
                   "CRET"),
            "got " + kMask);
  EXPECT_EQ(r.mask("Authorization: Bearer xyzCRET rejected"),
            "Authorization: Bearer " + kMask + " rejected");
}

TEST(Redactor, LeavesOrdinaryTextAndOtherKeysAlone) {
  const Redactor r({kKey});
  const std::string plain =
      "invalid_api_key: Incorrect API key provided. Bearer token missing; SECRET CRET error";
  EXPECT_EQ(r.mask(plain), plain);
  // Another key's hint: its tail is not this key's tail.
  EXPECT_EQ(r.mask("sk-****WXYZ"), "sk-****WXYZ");
  // The tail without a prefix that says "key" is just a word.
  EXPECT_EQ(r.mask("the word CRET and xCRET"), "the word CRET and xCRET");
  EXPECT_EQ(r.mask(""), "");
}

TEST(Redactor, ShortSecretsAreMaskedWholeOnlyAndTinyOnesNotAtAll) {
  const Redactor r({"hunter22", "none", "abc"});
  EXPECT_EQ(r.mask("password hunter22 rejected"), "password " + kMask + " rejected");
  // Below 12 characters a fragment is not masked: "hunter" is a word.
  EXPECT_EQ(r.mask("the hunter came"), "the hunter came");
  // Below 6 characters a "secret" would mask ordinary words.
  EXPECT_EQ(r.mask("none of abc"), "none of abc");
}

TEST(Redactor, MasksSeveralSecretsAndMergesTouchingMasks) {
  const std::string other = "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY";
  const Redactor r({kKey, other, kKey});
  EXPECT_EQ(r.mask("a=" + kKey + " b=" + other + " c=AIza...MBWY"),
            "a=" + kMask + " b=" + kMask + " c=" + kMask);
  EXPECT_EQ(r.mask(kKey + other), kMask);
  EXPECT_FALSE(r.empty());
}

TEST(Redactor, WithoutSecretsTextIsUnchanged) {
  const Redactor none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.mask("sk-****CRET " + kKey), "sk-****CRET " + kKey);
  EXPECT_TRUE(Redactor({"", "abc"}).empty());
}

}  // namespace
}  // namespace lse::util
