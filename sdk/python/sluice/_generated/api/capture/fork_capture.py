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
    session_id: str,
    n: int,
    *,
    body: ForkRequest,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/capture-sessions/{session_id}/captures/{n}/fork".format(session_id=quote(str(session_id), safe=""),n=quote(str(n), safe=""),),
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
    session_id: str,
    n: int,
    *,
    client: AuthenticatedClient,
    body: ForkRequest,

) -> Response[ErrorBody | ForkResponse]:
    """ Fork a kept capture `count` times (202): workspaces like the one whose
    executor registered it, each restoring it on a session of its own.

    Args:
        session_id (str):
        n (int):
        body (ForkRequest): A fork: how many, and what their names start with.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ForkResponse]
     """


    kwargs = _get_kwargs(
        session_id=session_id,
n=n,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    session_id: str,
    n: int,
    *,
    client: AuthenticatedClient,
    body: ForkRequest,

) -> ErrorBody | ForkResponse | None:
    """ Fork a kept capture `count` times (202): workspaces like the one whose
    executor registered it, each restoring it on a session of its own.

    Args:
        session_id (str):
        n (int):
        body (ForkRequest): A fork: how many, and what their names start with.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ForkResponse
     """


    return sync_detailed(
        session_id=session_id,
n=n,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    session_id: str,
    n: int,
    *,
    client: AuthenticatedClient,
    body: ForkRequest,

) -> Response[ErrorBody | ForkResponse]:
    """ Fork a kept capture `count` times (202): workspaces like the one whose
    executor registered it, each restoring it on a session of its own.

    Args:
        session_id (str):
        n (int):
        body (ForkRequest): A fork: how many, and what their names start with.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ForkResponse]
     """


    kwargs = _get_kwargs(
        session_id=session_id,
n=n,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    session_id: str,
    n: int,
    *,
    client: AuthenticatedClient,
    body: ForkRequest,

) -> ErrorBody | ForkResponse | None:
    """ Fork a kept capture `count` times (202): workspaces like the one whose
    executor registered it, each restoring it on a session of its own.

    Args:
        session_id (str):
        n (int):
        body (ForkRequest): A fork: how many, and what their names start with.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ForkResponse
     """


    return (await asyncio_detailed(
        session_id=session_id,
n=n,
client=client,
body=body,

    )).parsed
