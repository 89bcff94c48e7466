from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.fork_request import ForkRequest
from ...models.fork_response import ForkResponse
from typing import cast



def _get_kwargs(
    workspace_id: str,
    *,
    body: ForkRequest,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/workspaces/{workspace_id}/fork".format(workspace_id=quote(str(workspace_id), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | ForkResponse | None:
    if response.status_code == 202:
        response_202 = ForkResponse.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | ForkResponse]:
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
    body: ForkRequest,

) -> Response[ErrorBody | ForkResponse]:
    """ Fork a capture-sourced workspace `count` times (202): a suspend flush
    takes its point while it keeps running (a sleeping or stopped one forks
    from its saved head), and each fork restores that point on a session of
    its own.

    Args:
        workspace_id (str):
        body (ForkRequest): A fork: how many, and what their names start with.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ForkResponse]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: ForkRequest,

) -> ErrorBody | ForkResponse | None:
    """ Fork a capture-sourced workspace `count` times (202): a suspend flush
    takes its point while it keeps running (a sleeping or stopped one forks
    from its saved head), and each fork restores that point on a session of
    its own.

    Args:
        workspace_id (str):
        body (ForkRequest): A fork: how many, and what their names start with.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ForkResponse
     """


    return sync_detailed(
        workspace_id=workspace_id,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: ForkRequest,

) -> Response[ErrorBody | ForkResponse]:
    """ Fork a capture-sourced workspace `count` times (202): a suspend flush
    takes its point while it keeps running (a sleeping or stopped one forks
    from its saved head), and each fork restores that point on a session of
    its own.

    Args:
        workspace_id (str):
        body (ForkRequest): A fork: how many, and what their names start with.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ForkResponse]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: ForkRequest,

) -> ErrorBody | ForkResponse | None:
    """ Fork a capture-sourced workspace `count` times (202): a suspend flush
    takes its point while it keeps running (a sleeping or stopped one forks
    from its saved head), and each fork restores that point on a session of
    its own.

    Args:
        workspace_id (str):
        body (ForkRequest): A fork: how many, and what their names start with.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ForkResponse
     """


    return (await asyncio_detailed(
        workspace_id=workspace_id,
client=client,
body=body,

    )).parsed
