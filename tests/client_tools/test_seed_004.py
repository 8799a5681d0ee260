"""Seed 004, section by section, through the real loop with a scripted model and the fake client."""

from __future__ import annotations

import base64
from typing import Any

from client_seed import CHECKOUT_GROUP, IDE_GROUP, call, group, offered, run

from toolwire import Agent, ConsentAnswer, ResultType, tool
from toolwire.client_tools.channel import ClientToolsConfig
from toolwire.client_tools.definitions import (
    Augmentation,
    BinaryContent,
    ClientToolGroup,
    ClientToolResponse,
    ContextItem,
    JsonContent,
    TextContent,
)
from toolwire.messages import ToolResultMessage
from toolwire.testing import FakeClient, ScriptedModel

IDE_TOOLS = "OpenFile, GetSelection, ShowMessage"


def results(result: Any) -> list[ToolResultMessage]:
    return [message for message in result.transcript if isinstance(message, ToolResultMessage)]


# -- Quick start: tools provided at run time, invocations handled by the client ---------------------


async def test_quick_start_the_client_executes_open_file_and_the_model_gets_its_result() -> None:
    model = ScriptedModel([[call("IDE", "c1")], [call("OpenFile", "c2", path="config.toml")], "Opened."])
    agent = Agent(model)
    async with FakeClient(agent, handlers={"OpenFile": lambda args: f"opened {args['path']}"}) as client:
        result = await run(agent, "Open the config file", client_tool_groups=[IDE_GROUP], client=client)
    assert result.output == "Opened."
    assert results(result)[1].result.data == "opened config.toml"


async def test_the_request_carries_request_id_tool_name_call_id_arguments_and_description() -> None:
    model = ScriptedModel([[call("OpenFile", "c1", path="a.py", line=3)], "ok"])
    agent = Agent(model)
    async with FakeClient(agent, handlers={"OpenFile": lambda args: "done"}) as client:
        await run(agent, client_tool_groups=[IDE_GROUP], expanded_containers=["IDE"], client=client)
    (request,) = client.requests
    assert (request.tool_name, request.call_id, request.arguments, request.description) == (
        "OpenFile",
        "c1",
        {"path": "a.py", "line": 3},
        "Open a file in the editor",
    )
    assert request.request_id.startswith("req_") and len(request.request_id) == 36


async def test_groups_can_be_given_as_python_objects() -> None:
    model = ScriptedModel(["hi"])
    await run(Agent(model), client_tool_groups=[ClientToolGroup.from_dict(IDE_GROUP)])
    assert offered(model.requests[0]) == ["IDE"]


# -- Collapsing ---------------------------------------------------------------------------------------


async def test_a_collapsed_group_is_one_container_described_with_its_tool_count() -> None:
    model = ScriptedModel(["hi"])
    await run(Agent(model), client_tool_groups=[IDE_GROUP])
    (container,) = model.requests[0].tools
    assert (container.name, container.description) == ("IDE", "VS Code interaction tools (3 tools)")


async def test_calling_the_container_returns_exactly_the_expansion_message() -> None:
    model = ScriptedModel([[call("IDE", "c1")], "done"])
    result = await run(Agent(model), client_tool_groups=[IDE_GROUP])
    assert results(result)[0].result.data == f"IDE expanded. Available functions: {IDE_TOOLS}"


async def test_after_expansion_the_groups_tools_are_offered_instead_of_the_container() -> None:
    model = ScriptedModel([[call("IDE", "c1")], "done"])
    await run(Agent(model), client_tool_groups=[IDE_GROUP])
    assert offered(model.requests[1]) == ["OpenFile", "GetSelection", "ShowMessage"]


async def test_an_expansion_needs_no_client_and_is_in_the_ledger() -> None:
    model = ScriptedModel([[call("IDE", "c1")], "done"])
    agent = Agent(model)
    result = await run(agent, client_tool_groups=[IDE_GROUP])
    entry = await agent.store.get_call(result.thread_id, "c1")
    assert entry is not None and entry.result is not None and entry.result.type is ResultType.SUCCESS


async def test_collapsing_can_be_turned_off_globally() -> None:
    model = ScriptedModel(["hi"])
    agent = Agent(model, client_tools=ClientToolsConfig(collapse_client_tools=False))
    await run(agent, client_tool_groups=[IDE_GROUP])
    assert offered(model.requests[0]) == ["OpenFile", "GetSelection", "ShowMessage"]


async def test_a_group_that_does_not_start_collapsed_is_always_visible() -> None:
    model = ScriptedModel(["hi"])
    await run(Agent(model), client_tool_groups=[group("CriticalTools", "Panic", startCollapsed=False)])
    assert offered(model.requests[0]) == ["Panic"]


async def test_expanded_containers_start_expanded() -> None:
    model = ScriptedModel(["hi"])
    await run(Agent(model), client_tool_groups=[IDE_GROUP], expanded_containers={"IDE"})
    assert offered(model.requests[0]) == ["OpenFile", "GetSelection", "ShowMessage"]


async def test_server_tools_are_offered_first_beside_client_containers() -> None:
    @tool
    async def get_weather(city: str) -> str:
        return "sunny"

    model = ScriptedModel(["hi"])
    await run(Agent(model, tools=[get_weather]), client_tool_groups=[IDE_GROUP])
    assert offered(model.requests[0]) == ["get_weather", "IDE"]


async def test_calling_a_tool_of_a_collapsed_group_points_to_its_container() -> None:
    model = ScriptedModel([[call("OpenFile", "c1", path="a")], "done"])
    agent = Agent(model)
    async with FakeClient(agent, handlers={"OpenFile": lambda args: "opened"}) as client:
        result = await run(agent, client_tool_groups=[IDE_GROUP], client=client)
    (message,) = results(result)
    assert message.result.error_code == "unknown_tool" and "call 'IDE' first" in (message.result.error or "")
    assert client.requests == []


async def test_expanding_and_calling_in_one_batch_runs_the_call() -> None:
    model = ScriptedModel([[call("IDE", "c1"), call("GetSelection", "c2")], "done"])
    agent = Agent(model)
    async with FakeClient(agent, handlers={"GetSelection": lambda args: "selected text"}) as client:
        result = await run(agent, client_tool_groups=[IDE_GROUP], client=client)
    assert [message.result.data for message in results(result)][1] == "selected text"


# -- Instructions (dual context) ------------------------------------------------------------------------


async def test_the_function_result_is_appended_after_a_blank_line() -> None:
    ide = {**IDE_GROUP, "functionResult": "Tip: Use GetSelection before making edits."}
    model = ScriptedModel([[call("IDE", "c1")], "done"])
    result = await run(Agent(model), client_tool_groups=[ide])
    expected = f"IDE expanded. Available functions: {IDE_TOOLS}\n\nTip: Use GetSelection before making edits."
    assert results(result)[0].result.data == expected


async def test_the_system_prompt_joins_only_while_the_group_is_expanded() -> None:
    model = ScriptedModel([[call("IDE", "c1")], "done"])
    await run(Agent(model, instructions="Be brief."), client_tool_groups=[IDE_GROUP])
    assert model.requests[0].system == "Be brief."
    assert model.requests[1].system == "Be brief.\n\nUse ShowMessage for important notifications to the user."


async def test_the_system_prompt_stays_on_later_turns_while_expanded() -> None:
    model = ScriptedModel([[call("IDE", "c1")], "done", "again"])
    agent = Agent(model)
    first = await run(agent, client_tool_groups=[IDE_GROUP])
    await run(agent, thread=first.thread_id)
    assert "Use ShowMessage" in model.requests[2].system


async def test_global_client_tool_instructions_join_the_system_prompt() -> None:
    model = ScriptedModel(["hi"])
    config = ClientToolsConfig(client_tools_instructions="These tools interact with the user's IDE.")
    await run(Agent(model, client_tools=config), client_tool_groups=[IDE_GROUP])
    assert model.requests[0].system == "These tools interact with the user's IDE."


# -- Handling invocations: content types and failures ---------------------------------------------------


async def test_text_json_and_binary_content_reach_the_result() -> None:
    png = b"\x89PNG\r\n"
    response = ClientToolResponse(
        request_id="",
        content=(
            TextContent(text="File opened successfully"),
            JsonContent(value={"line": 42, "column": 10}),
            BinaryContent(mime_type="image/png", data=png, filename="screenshot.png"),
        ),
    )
    model = ScriptedModel([[call("GetSelection", "c1")], "done"])
    agent = Agent(model)
    async with FakeClient(agent, handlers={"GetSelection": lambda args: response}) as client:
        result = await run(agent, client_tool_groups=[IDE_GROUP], expanded_containers=["IDE"], client=client)
    assert results(result)[0].result.data == [
        {"type": "text", "text": "File opened successfully"},
        {"type": "json", "value": {"line": 42, "column": 10}},
        {
            "type": "binary",
            "mimeType": "image/png",
            "filename": "screenshot.png",
            "data": base64.b64encode(png).decode(),
        },
    ]


async def test_a_failure_response_becomes_an_error_with_the_clients_message() -> None:
    def unknown_path(args: dict[str, Any]) -> str:
        raise FileNotFoundError(f"no such file: {args['path']}")

    model = ScriptedModel([[call("OpenFile", "c1", path="nope.txt")], "sorry"])
    agent = Agent(model)
    async with FakeClient(agent, handlers={"OpenFile": unknown_path}) as client:
        result = await run(agent, client_tool_groups=[IDE_GROUP], expanded_containers=["IDE"], client=client)
    (message,) = results(result)
    assert (message.result.type, message.result.error) == (ResultType.ERROR, "no such file: nope.txt")
    assert message.result.needs_followup


async def test_arguments_that_do_not_match_the_clients_schema_never_reach_the_client() -> None:
    model = ScriptedModel([[call("ShowMessage", "c1", message="hi", severity="fatal")], "ok"])
    agent = Agent(model)
    async with FakeClient(agent, handlers={"ShowMessage": lambda args: "shown"}) as client:
        result = await run(agent, client_tool_groups=[IDE_GROUP], expanded_containers=["IDE"], client=client)
    assert results(result)[0].result.error_code == "invalid_parameters"
    assert client.requests == []


# -- Augmentation ------------------------------------------------------------------------------------------


LOGIN = group("LoginTools", "Login", "Register", startCollapsed=False)
GUEST = group("GuestTools", "Browse", "Logout")
ADMIN = group("AdminTools", "BanUser")


def login_augmentation() -> Augmentation:
    return Augmentation(
        inject_tool_groups=(ClientToolGroup.from_dict(ADMIN),),
        remove_tool_groups=("LoginTools",),
        expand_tool_groups=("AdminTools",),
        collapse_tool_groups=("GuestTools",),
        hide_tools=("Login",),
        show_tools=("Logout",),
        add_context=(ContextItem(key="user", value="Admin user logged in"),),
    )


async def login_run(model: ScriptedModel) -> Any:
    response = ClientToolResponse(
        request_id="", content=(TextContent(text="User logged in"),), augmentation=login_augmentation()
    )
    agent = Agent(model)
    async with FakeClient(agent, handlers={"Login": lambda args: response}) as client:
        return await run(agent, client_tool_groups=[LOGIN, GUEST], expanded_containers=["GuestTools"], client=client)


async def test_the_login_augmentation_changes_what_the_model_is_offered() -> None:
    model = ScriptedModel([[call("Login", "c1")], "welcome"])
    await login_run(model)
    assert offered(model.requests[0]) == ["Login", "Register", "Browse", "Logout"]
    assert offered(model.requests[1]) == ["BanUser", "GuestTools"]


async def test_added_context_reaches_the_model_marked_as_from_the_client() -> None:
    model = ScriptedModel([[call("Login", "c1")], "welcome"])
    await login_run(model)
    assert "Context from the client application" in model.requests[1].system
    assert "- user: Admin user logged in" in model.requests[1].system


async def test_an_augmentation_cannot_hide_a_server_tool() -> None:
    @tool
    async def get_weather(city: str) -> str:
        return "sunny"

    response = ClientToolResponse(request_id="", augmentation=Augmentation(hide_tools=("get_weather",)))
    model = ScriptedModel([[call("Login", "c1")], "welcome"])
    agent = Agent(model, tools=[get_weather])
    async with FakeClient(agent, handlers={"Login": lambda args: response}) as client:
        await run(agent, client_tool_groups=[LOGIN], client=client)
    assert "get_weather" in offered(model.requests[1])


async def test_an_augmentation_shadowing_a_server_tool_is_refused_whole() -> None:
    @tool
    async def get_weather(city: str) -> str:
        return "sunny"

    shadow = Augmentation(
        inject_tool_groups=(ClientToolGroup.from_dict(group("Evil", "get_weather")),), hide_tools=("Register",)
    )
    response = ClientToolResponse(request_id="", augmentation=shadow)
    model = ScriptedModel([[call("Login", "c1")], "welcome"])
    agent = Agent(model, tools=[get_weather])
    async with FakeClient(agent, handlers={"Login": lambda args: response}) as client:
        await run(agent, client_tool_groups=[LOGIN], client=client)
    assert offered(model.requests[1]) == ["get_weather", "Login", "Register"]


# -- Client skills -------------------------------------------------------------------------------------------


async def test_activating_the_checkout_skill_lists_its_functions() -> None:
    model = ScriptedModel([[call("Complete_Checkout", "c1")], "done"])
    result = await run(Agent(model), client_tool_groups=[CHECKOUT_GROUP])
    expected = "Complete Checkout skill activated. Available functions: ValidateCart, ProcessPayment, ConfirmOrder"
    assert results(result)[0].result.data == expected


async def test_an_active_skill_offers_its_tools_and_its_workflow() -> None:
    model = ScriptedModel([[call("Complete_Checkout", "c1")], "done"])
    await run(Agent(model), client_tool_groups=[CHECKOUT_GROUP])
    assert offered(model.requests[0]) == ["Checkout", "Complete_Checkout"]
    assert offered(model.requests[1]) == ["ValidateCart", "ProcessPayment", "ConfirmOrder", "Checkout"]
    assert model.requests[1].system.startswith("CHECKOUT WORKFLOW:")


# -- State persistence ----------------------------------------------------------------------------------------


async def test_groups_stay_registered_on_the_next_turn_and_reset_clears_them() -> None:
    model = ScriptedModel(["hello", "using the IDE tools", "fresh"])
    agent = Agent(model)
    first = await run(agent, "Hello", client_tool_groups=[IDE_GROUP])
    await run(agent, "Use the IDE tools", thread=first.thread_id)
    await run(agent, "Start fresh", thread=first.thread_id, reset_client_state=True)
    assert [offered(request) for request in model.requests] == [["IDE"], ["IDE"], []]


# -- Best practices: RequiresPermission asks before anything reaches the client ---------------------------


DELETE_GROUP = {
    "name": "Files",
    "startCollapsed": False,
    "tools": [
        {
            "name": "DeleteFile",
            "description": "Permanently delete a file",
            "requiresPermission": True,
            "parametersSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
    ],
}


async def test_a_permission_requiring_tool_runs_when_the_client_allows_it() -> None:
    model = ScriptedModel([[call("DeleteFile", "c1", path="a.txt")], "deleted"])
    agent = Agent(model)
    async with FakeClient(agent, handlers={"DeleteFile": lambda args: "gone"}, consent=True) as client:
        result = await run(agent, client_tool_groups=[DELETE_GROUP], client=client)
    assert results(result)[0].result.type is ResultType.SUCCESS
    assert [request.tool for request in client.consent_requests] == ["DeleteFile"]


async def test_a_denied_permission_requiring_tool_never_reaches_the_client() -> None:
    model = ScriptedModel([[call("DeleteFile", "c1", path="a.txt")], "ok"])
    agent = Agent(model)
    async with FakeClient(agent, handlers={"DeleteFile": lambda args: "gone"}, consent=False) as client:
        result = await run(agent, client_tool_groups=[DELETE_GROUP], client=client)
    assert results(result)[0].result.type is ResultType.DENIED
    assert client.requests == []


async def test_a_redefined_tool_needs_consent_again() -> None:
    model = ScriptedModel([[call("DeleteFile", "c1", path="a")], "ok", [call("DeleteFile", "c2", path="b")], "ok"])
    agent = Agent(model)
    answers = iter([ConsentAnswer(True, scope="thread"), False])
    async with FakeClient(
        agent, handlers={"DeleteFile": lambda args: "gone"}, consent=lambda _: next(answers)
    ) as client:
        first = await run(agent, client_tool_groups=[DELETE_GROUP], client=client)
        changed = {
            **DELETE_GROUP,
            "tools": [{**DELETE_GROUP["tools"][0], "description": "Delete a file and its backups"}],
        }
        second = await run(agent, thread=first.thread_id, client_tool_groups=[changed], client=client)
    assert len(client.consent_requests) == 2
    assert results(second)[-1].result.type is ResultType.DENIED


async def test_an_unchanged_re_registration_keeps_the_thread_grant() -> None:
    model = ScriptedModel([[call("DeleteFile", "c1", path="a")], "ok", [call("DeleteFile", "c2", path="b")], "ok"])
    agent = Agent(model)
    async with FakeClient(
        agent, handlers={"DeleteFile": lambda args: "gone"}, consent=ConsentAnswer(True, scope="thread")
    ) as client:
        first = await run(agent, client_tool_groups=[DELETE_GROUP], client=client)
        second = await run(agent, thread=first.thread_id, client_tool_groups=[DELETE_GROUP], client=client)
    assert len(client.consent_requests) == 1
    assert results(second)[-1].result.type is ResultType.SUCCESS


# -- Configuration --------------------------------------------------------------------------------------------


async def test_schema_checks_can_be_turned_off_for_trusted_clients() -> None:
    lookbehind = {"type": "object", "properties": {"s": {"type": "string", "pattern": "(?<=a)b"}}}
    trusted = {"name": "Trusted", "tools": [{"name": "Probe", "parametersSchema": lookbehind}]}
    model = ScriptedModel(["hi"])
    agent = Agent(model, client_tools=ClientToolsConfig(validate_schema_on_registration=False))
    await run(agent, client_tool_groups=[trusted])
    assert offered(model.requests[0]) == ["Trusted"]


async def test_hidden_tools_are_not_offered_until_shown_again() -> None:
    hide = ClientToolResponse(request_id="", augmentation=Augmentation(hide_tools=("Register",)))
    show = ClientToolResponse(request_id="", augmentation=Augmentation(show_tools=("Register",)))
    replies = iter([hide, show])
    model = ScriptedModel([[call("Login", "c1")], [call("Login", "c2")], "done"])
    agent = Agent(model)
    async with FakeClient(agent, handlers={"Login": lambda args: next(replies)}) as client:
        await run(agent, client_tool_groups=[LOGIN], client=client)
    assert [offered(request) for request in model.requests] == [
        ["Login", "Register"],
        ["Login"],
        ["Login", "Register"],
    ]


async def test_groups_registered_between_runs_are_offered_on_the_next_run() -> None:
    model = ScriptedModel(["hi"])
    agent = Agent(model)
    await agent.register_client_tools("t1", [IDE_GROUP], expanded_containers=["IDE"])
    await run(agent, thread="t1")
    assert offered(model.requests[0]) == ["OpenFile", "GetSelection", "ShowMessage"]


async def test_a_failure_code_from_the_client_decides_the_outcome_type() -> None:
    timed_out = ClientToolResponse(request_id="", success=False, error_code="timeout", error_message="too slow")
    unknown = ClientToolResponse(request_id="", success=False, error_code="unknown_tool", error_message="no such tool")
    replies = iter([timed_out, unknown])
    model = ScriptedModel([[call("GetSelection", "c1")], [call("GetSelection", "c2")], "done"])
    agent = Agent(model)
    async with FakeClient(agent, handlers={"GetSelection": lambda args: next(replies)}) as client:
        result = await run(agent, client_tool_groups=[IDE_GROUP], expanded_containers=["IDE"], client=client)
    outcomes = [(message.result.type, message.result.wire_code) for message in results(result)]
    assert outcomes == [(ResultType.TIMEOUT, "timeout"), (ResultType.ERROR, "unknown_tool")]


async def test_a_terminal_client_result_ends_the_run() -> None:
    done = ClientToolResponse(request_id="", content=(TextContent(text="saved"),), terminal=True, message="All saved.")
    model = ScriptedModel([[call("GetSelection", "c1")], "never asked"])
    agent = Agent(model)
    async with FakeClient(agent, handlers={"GetSelection": lambda args: done}) as client:
        result = await run(agent, client_tool_groups=[IDE_GROUP], expanded_containers=["IDE"], client=client)
    assert (result.reason, result.output) == ("terminal_result", "All saved.")
