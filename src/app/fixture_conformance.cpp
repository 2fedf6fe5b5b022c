#include "app/fixture_conformance.h"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>

namespace toolbridge::fixture {

namespace asio = boost::asio;
namespace bj = boost::json;
using mcp::tool_error;
using mcp::tool_text;
using mcp::ToolContext;

namespace {

// A 1x1 red PNG and an 8-sample silent 8 kHz mono WAV: the smallest valid media payloads.
constexpr const char* kPng =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
constexpr const char* kWav =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

bj::object no_args() {
  return bj::object{{"type", "object"}, {"properties", bj::object{}}};
}

bj::object string_args(std::initializer_list<const char*> names) {
  bj::object props;
  bj::array required;
  for (const char* n : names) {
    props[n] = bj::object{{"type", "string"}};
    required.push_back(n);
  }
  return bj::object{{"type", "object"}, {"properties", props}, {"required", required}};
}

std::string arg(const bj::object& args, const char* key) {
  const auto* v = args.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

bj::object result(bj::array content) {
  return bj::object{{"content", std::move(content)}, {"isError", false}};
}

bj::object text_block(const std::string& text) {
  return bj::object{{"type", "text"}, {"text", text}};
}

bj::object image_block() {
  return bj::object{{"type", "image"}, {"data", kPng}, {"mimeType", "image/png"}};
}

bj::object resource_block(const char* uri, const char* mime, const std::string& text) {
  return bj::object{{"type", "resource"},
                    {"resource", bj::object{{"uri", uri}, {"mimeType", mime}, {"text", text}}}};
}

asio::awaitable<void> pause(asio::io_context& io, std::chrono::milliseconds d) {
  asio::steady_timer t(io, d);
  co_await t.async_wait(asio::use_awaitable);
}

// Asks the client through elicitation/create and reports its answer as text.
asio::awaitable<bj::object> elicit(ToolContext& ctx, std::string message, bj::object schema,
                                   std::string prefix) {
  if (!ctx.client().elicitation) co_return tool_error("the client does not support elicitation");
  bj::object params{{"message", std::move(message)}, {"requestedSchema", std::move(schema)}};
  const std::string method = "elicitation/create";
  bj::value answer = co_await ctx.ask_client(method, std::move(params));
  const auto& a = answer.as_object();
  if (const auto* err = a.if_contains("error"))
    co_return tool_error("elicitation failed: " + bj::serialize(*err));
  const auto* action = a.if_contains("action");
  const auto* content = a.if_contains("content");
  co_return tool_text(prefix + "action=" + (action ? bj::serialize(*action) : std::string("null")) +
                      ", content=" + (content ? bj::serialize(*content) : std::string("{}")));
}

bj::array titled(std::initializer_list<std::pair<const char*, const char*>> options) {
  bj::array out;
  for (auto [value, title] : options) out.push_back(bj::object{{"const", value}, {"title", title}});
  return out;
}

}  // namespace

void add_conformance_surface(mcp::Server& server, asio::io_context& io) {
  server.add_tool({"test_simple_text", "Returns one text block.", no_args(),
                   [](bj::object, ToolContext&) -> asio::awaitable<bj::object> {
                     co_return tool_text("This is a simple text response for testing.");
                   }});
  server.add_tool({"test_image_content", "Returns one PNG image block.", no_args(),
                   [](bj::object, ToolContext&) -> asio::awaitable<bj::object> {
                     co_return result(bj::array{image_block()});
                   }});
  server.add_tool({"test_audio_content", "Returns one WAV audio block.", no_args(),
                   [](bj::object, ToolContext&) -> asio::awaitable<bj::object> {
                     co_return result(bj::array{
                         bj::object{{"type", "audio"}, {"data", kWav}, {"mimeType", "audio/wav"}}});
                   }});
  server.add_tool({"test_embedded_resource", "Returns an embedded text resource.", no_args(),
                   [](bj::object, ToolContext&) -> asio::awaitable<bj::object> {
                     co_return result(
                         bj::array{resource_block("test://embedded-resource", "text/plain",
                                                  "This is an embedded resource content.")});
                   }});
  server.add_tool({"test_multiple_content_types", "Returns text, image and resource blocks.",
                   no_args(), [](bj::object, ToolContext&) -> asio::awaitable<bj::object> {
                     co_return result(bj::array{
                         text_block("Multiple content types test:"), image_block(),
                         resource_block("test://mixed-content-resource", "application/json",
                                        R"({"test":"data","value":123})")});
                   }});
  server.add_tool({"test_tool_with_logging", "Sends three info log messages 50 ms apart.",
                   no_args(), [&io](bj::object, ToolContext& ctx) -> asio::awaitable<bj::object> {
                     ctx.log("info", bj::string("Tool execution started"), "conformance");
                     co_await pause(io, std::chrono::milliseconds(50));
                     ctx.log("info", bj::string("Tool processing data"), "conformance");
                     co_await pause(io, std::chrono::milliseconds(50));
                     ctx.log("info", bj::string("Tool execution completed"), "conformance");
                     co_return tool_text("Tool with logging executed successfully");
                   }});
  server.add_tool({"test_tool_with_progress", "Reports progress 0, 50, 100 of 100, 50 ms apart.",
                   no_args(), [&io](bj::object, ToolContext& ctx) -> asio::awaitable<bj::object> {
                     for (int step = 0; step <= 100; step += 50) {
                       if (step > 0) co_await pause(io, std::chrono::milliseconds(50));
                       ctx.progress(step, 100);
                     }
                     co_return tool_text("Tool with progress executed successfully");
                   }});
  server.add_tool({"test_error_handling", "Always fails with a tool error.", no_args(),
                   [](bj::object, ToolContext&) -> asio::awaitable<bj::object> {
                     co_return tool_error("This tool intentionally returns an error for testing");
                   }});
  server.add_tool(
      {"test_sampling", "Asks the client for an LLM completion of `prompt`.",
       string_args({"prompt"}),
       [](bj::object args, ToolContext& ctx) -> asio::awaitable<bj::object> {
         if (!ctx.client().sampling) co_return tool_error("the client does not support sampling");
         bj::object params{
             {"messages", bj::array{bj::object{{"role", "user"},
                                               {"content", text_block(arg(args, "prompt"))}}}},
             {"maxTokens", 100}};
         const std::string method = "sampling/createMessage";
         bj::value answer = co_await ctx.ask_client(method, std::move(params));
         const auto& a = answer.as_object();
         if (const auto* err = a.if_contains("error")) {
           co_return tool_error("sampling failed: " + bj::serialize(*err));
         }
         std::string reply;
         if (const auto* c = a.if_contains("content"); c && c->is_object())
           reply = arg(c->as_object(), "text");
         co_return tool_text("LLM response: " + reply);
       }});
  server.add_tool(
      {"test_elicitation", "Asks the user for a username and an email.", string_args({"message"}),
       [](bj::object args, ToolContext& ctx) -> asio::awaitable<bj::object> {
         bj::object schema{
             {"type", "object"},
             {"properties",
              bj::object{
                  {"username", bj::object{{"type", "string"}, {"description", "User's response"}}},
                  {"email",
                   bj::object{{"type", "string"}, {"description", "User's email address"}}}}},
             {"required", bj::array{"username", "email"}}};
         auto r = co_await elicit(ctx, arg(args, "message"), std::move(schema), "User response: ");
         co_return r;
       }});
  server.add_tool(
      {"test_elicitation_sep1034_defaults",
       "Elicits every primitive type with a default value (SEP-1034).", no_args(),
       [](bj::object, ToolContext& ctx) -> asio::awaitable<bj::object> {
         bj::object props{
             {"name",
              bj::object{{"type", "string"}, {"description", "Name"}, {"default", "John Doe"}}},
             {"age", bj::object{{"type", "integer"}, {"description", "Age"}, {"default", 30}}},
             {"score", bj::object{{"type", "number"}, {"description", "Score"}, {"default", 95.5}}},
             {"status", bj::object{{"type", "string"},
                                   {"description", "Status"},
                                   {"enum", bj::array{"active", "inactive", "pending"}},
                                   {"default", "active"}}},
             {"verified",
              bj::object{{"type", "boolean"}, {"description", "Verified"}, {"default", true}}}};
         bj::object schema{{"type", "object"}, {"properties", std::move(props)}};
         auto r = co_await elicit(ctx, "Please review the defaults", std::move(schema),
                                  "Elicitation completed: ");
         co_return r;
       }});
  server.add_tool(
      {"test_elicitation_sep1330_enums", "Elicits the five enum schema variants (SEP-1330).",
       no_args(), [](bj::object, ToolContext& ctx) -> asio::awaitable<bj::object> {
         const bj::array one_of = titled(
             {{"value1", "First Option"}, {"value2", "Second Option"}, {"value3", "Third Option"}});
         const bj::array any_of = titled(
             {{"value1", "First Choice"}, {"value2", "Second Choice"}, {"value3", "Third Choice"}});
         bj::object props{
             {"untitledSingle",
              bj::object{{"type", "string"}, {"enum", bj::array{"option1", "option2", "option3"}}}},
             {"titledSingle", bj::object{{"type", "string"}, {"oneOf", one_of}}},
             {"legacyEnum",
              bj::object{{"type", "string"},
                         {"enum", bj::array{"opt1", "opt2", "opt3"}},
                         {"enumNames", bj::array{"Option One", "Option Two", "Option Three"}}}},
             {"untitledMulti",
              bj::object{
                  {"type", "array"},
                  {"items", bj::object{{"type", "string"},
                                       {"enum", bj::array{"option1", "option2", "option3"}}}}}},
             {"titledMulti",
              bj::object{{"type", "array"}, {"items", bj::object{{"anyOf", any_of}}}}}};
         bj::object schema{{"type", "object"}, {"properties", std::move(props)}};
         auto r = co_await elicit(ctx, "Please pick options", std::move(schema),
                                  "Elicitation completed: ");
         co_return r;
       }});
  server.add_tool(
      {"json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features",
       bj::object{
           {"$schema", "https://json-schema.org/draft/2020-12/schema"},
           {"type", "object"},
           {"$defs",
            bj::object{
                {"address", bj::object{{"type", "object"},
                                       {"properties",
                                        bj::object{{"street", bj::object{{"type", "string"}}},
                                                   {"city", bj::object{{"type", "string"}}}}}}}}},
           {"properties", bj::object{{"name", bj::object{{"type", "string"}}},
                                     {"address", bj::object{{"$ref", "#/$defs/address"}}}}},
           {"additionalProperties", false}},
       [](bj::object args, ToolContext&) -> asio::awaitable<bj::object> {
         co_return tool_text(bj::serialize(args));
       }});

  auto text_resource = [](const char* text) {
    return [text](const std::string& uri) {
      return bj::object{
          {"contents",
           bj::array{bj::object{{"uri", uri}, {"mimeType", "text/plain"}, {"text", text}}}}};
    };
  };
  server.add_resource({"test://static-text", "static-text", "text/plain", false,
                       text_resource("This is the content of the static text resource."),
                       "A static text resource"});
  server.add_resource(
      {"test://static-binary", "static-binary", "image/png", false,
       [](const std::string& uri) {
         return bj::object{
             {"contents",
              bj::array{bj::object{{"uri", uri}, {"mimeType", "image/png"}, {"blob", kPng}}}}};
       },
       "A static PNG image"});
  server.add_resource({"test://watched-resource", "watched-resource", "text/plain", false,
                       text_resource("A resource clients may subscribe to."),
                       "A resource to subscribe to"});
  server.add_resource(
      {"test://template/{id}/data", "template-data", "application/json", true,
       [](const std::string& uri) {
         const std::string prefix = "test://template/";
         const std::string id = uri.substr(prefix.size(), uri.size() - prefix.size() - 5);
         const bj::object data{{"id", id}, {"templateTest", true}, {"data", "Data for ID: " + id}};
         return bj::object{{"contents", bj::array{bj::object{{"uri", uri},
                                                             {"mimeType", "application/json"},
                                                             {"text", bj::serialize(data)}}}}};
       },
       "Data by id"});

  auto user = [](bj::object content) {
    return bj::object{{"role", "user"}, {"content", std::move(content)}};
  };
  server.add_prompt(
      {"test_simple_prompt", "A prompt without arguments", bj::array{}, [user](const bj::object&) {
         return bj::object{
             {"messages", bj::array{user(text_block("This is a simple prompt for testing."))}}};
       }});
  server.add_prompt(
      {"test_prompt_with_arguments", "A prompt with two required arguments",
       bj::array{
           bj::object{{"name", "arg1"}, {"description", "First test argument"}, {"required", true}},
           bj::object{
               {"name", "arg2"}, {"description", "Second test argument"}, {"required", true}}},
       [user](const bj::object& args) {
         return bj::object{{"messages", bj::array{user(text_block("Prompt with arguments: arg1='" +
                                                                  arg(args, "arg1") + "', arg2='" +
                                                                  arg(args, "arg2") + "'"))}}};
       }});
  server.add_prompt(
      {"test_prompt_with_embedded_resource", "A prompt that embeds a resource",
       bj::array{bj::object{{"name", "resourceUri"},
                            {"description", "URI of the resource to embed"},
                            {"required", true}}},
       [user](const bj::object& args) {
         const std::string uri = arg(args, "resourceUri");
         bj::object embedded{
             {"type", "resource"},
             {"resource", bj::object{{"uri", uri},
                                     {"mimeType", "text/plain"},
                                     {"text", "Embedded resource content for testing."}}}};
         return bj::object{
             {"messages",
              bj::array{user(std::move(embedded)),
                        user(text_block("Please process the embedded resource above."))}}};
       }});
  server.add_prompt(
      {"test_prompt_with_image", "A prompt with an image", bj::array{}, [user](const bj::object&) {
         return bj::object{
             {"messages",
              bj::array{user(image_block()), user(text_block("Please analyze the image above."))}}};
       }});
}

}  // namespace toolbridge::fixture
