from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.exec_run import ExecRun
from ...models.exec_workspace_request import ExecWorkspaceRequest
from ...models.run_stream_event import RunStreamEvent
from ...models.wait_for import WaitFor
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    workspace_id: str,
    *,
    body: ExecWorkspaceRequest,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    params: dict[str, Any] = {}

    json_wait_for: str | Unset = UNSET
    if not isinstance(wait_for, Unset):
        json_wait_for = wait_for.value

    params["waitFor"] = json_wait_for

    params["timeoutMs"] = timeout_ms


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/workspaces/{workspace_id}/exec".format(workspace_id=quote(str(workspace_id), safe=""),),
        "params": params,
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | ExecRun | RunStreamEvent | None:
    if response.status_code == 200:
        response_200 = RunStreamEvent.from_dict(response.text)



        return response_200

    if response.status_code == 202:
        response_202 = ExecRun.from_dict(response.json())



        return response_202

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())



        return response_404

    if response.status_code == 409:
        response_409 = ErrorBody.from_dict(response.json())



        return response_409

    if response.status_code == 413:
        response_413 = ErrorBody.from_dict(response.json())



        return response_413

    if response.status_code == 500:
        response_500 = ErrorBody.from_dict(response.json())



        return response_500

    if response.status_code == 503:
        response_503 = ErrorBody.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | ExecRun | RunStreamEvent]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: ExecWorkspaceRequest,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,

) -> Response[ErrorBody | ExecRun | RunStreamEvent]:
    """ Run an ordered list of commands as one run (202; needs a live runtime).

     Runs the commands in order in the workspace's executor. Answers 202 with the run at once (read its
    end with `GET /v1/runs/{runId}`), or, asked with `Accept: text/event-stream`, 200 with the run's
    output as it happens: `event: run` (the run as the 202 would have answered it), then the events of
    `GET /v1/runs/{runId}/stream`, ending with `event: end`. A client that goes away does not stop the
    run; it attaches again with that stream.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        body (ExecWorkspaceRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ExecRun | RunStreamEvent]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
body=body,
wait_for=wait_for,
timeout_ms=timeout_ms,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: ExecWorkspaceRequest,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,

) -> ErrorBody | ExecRun | RunStreamEvent | None:
    """ Run an ordered list of commands as one run (202; needs a live runtime).

     Runs the commands in order in the workspace's executor. Answers 202 with the run at once (read its
    end with `GET /v1/runs/{runId}`), or, asked with `Accept: text/event-stream`, 200 with the run's
    output as it happens: `event: run` (the run as the 202 would have answered it), then the events of
    `GET /v1/runs/{runId}/stream`, ending with `event: end`. A client that goes away does not stop the
    run; it attaches again with that stream.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        body (ExecWorkspaceRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ExecRun | RunStreamEvent
     """


    return sync_detailed(
        workspace_id=workspace_id,
client=client,
body=body,
wait_for=wait_for,
timeout_ms=timeout_ms,

    ).parsed

async def asyncio_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: ExecWorkspaceRequest,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,

) -> Response[ErrorBody | ExecRun | RunStreamEvent]:
    """ Run an ordered list of commands as one run (202; needs a live runtime).

     Runs the commands in order in the workspace's executor. Answers 202 with the run at once (read its
    end with `GET /v1/runs/{runId}`), or, asked with `Accept: text/event-stream`, 200 with the run's
    output as it happens: `event: run` (the run as the 202 would have answered it), then the events of
    `GET /v1/runs/{runId}/stream`, ending with `event: end`. A client that goes away does not stop the
    run; it attaches again with that stream.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        body (ExecWorkspaceRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ExecRun | RunStreamEvent]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
body=body,
wait_for=wait_for,
timeout_ms=timeout_ms,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: ExecWorkspaceRequest,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,

) -> ErrorBody | ExecRun | RunStreamEvent | None:
    """ Run an ordered list of commands as one run (202; needs a live runtime).

     Runs the commands in order in the workspace's executor. Answers 202 with the run at once (read its
    end with `GET /v1/runs/{runId}`), or, asked with `Accept: text/event-stream`, 200 with the run's
    output as it happens: `event: run` (the run as the 202 would have answered it), then the events of
    `GET /v1/runs/{runId}/stream`, ending with `event: end`. A client that goes away does not stop the
    run; it attaches again with that stream.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        body (ExecWorkspaceRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ExecRun | RunStreamEvent
     """


    return (await asyncio_detailed(
        workspace_id=workspace_id,
client=client,
body=body,
wait_for=wait_for,
timeout_ms=timeout_ms,

    )).parsed
